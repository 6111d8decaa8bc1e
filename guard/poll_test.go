package guard_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// pollMessages returns n messages of scope partitions 0..parts-1, an hour old (their events
// are late), each carrying its delta (i+1) as payload, and the sum of the deltas.
func pollMessages(n, parts int, at time.Time) ([]guard.Message, int64) {
	msgs := make([]guard.Message, n)
	var sum int64
	for i := range msgs {
		msgs[i] = guard.Message{Scope: guard.Scope{Group: "g", Topic: "orders", Partition: int32(i % parts)},
			ID: fmt.Sprint("m-", i), Payload: []byte(strconv.Itoa(i + 1)), Time: at.Add(time.Duration(i) * time.Millisecond)}
		sum += int64(i + 1)
	}
	return msgs, sum
}

// recordPoll is the PollHandler of a consumer whose effect is a counter: the events of the
// poll's messages, recorded with one RecordBatch; fail names ids whose effect fails.
func recordPoll(log *events.Log, fail func(id string) bool) guard.PollHandler {
	return func(ctx context.Context, msgs []guard.Message) []error {
		errs := make([]error, len(msgs))
		var evs []events.Event
		for i, m := range msgs {
			if fail != nil && fail(m.ID) {
				errs[i] = fmt.Errorf("%s failed", m.ID)
				continue
			}
			d, err := strconv.ParseInt(string(m.Payload), 10, 64)
			if err != nil {
				errs[i] = err
				continue
			}
			evs = append(evs, events.Event{Counter: "c", ID: m.ID, Delta: d, Time: m.Time})
		}
		if err := log.RecordBatch(ctx, evs); err != nil {
			for i := range errs {
				errs[i] = err
			}
		}
		return errs
	}
}

// TestProcessPollAppliesLateEffectsOnce applies a poll of 600 late messages with one call:
// each effect counts once, failures are released and applied on redelivery, duplicates count
// nothing, and the late claims cost a few Paxos rounds, not one per message.
func TestProcessPollAppliesLateEffectsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	g, err := guard.New(session, guard.WithKeyspace(ks))
	require.NoError(t, err)
	log, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)
	msgs, sum := pollMessages(600, 3, time.Now().Add(-time.Hour))
	failing := map[string]bool{"m-7": true, "m-300": true}

	res, err := g.ProcessPoll(ctx, msgs, recordPoll(log, func(id string) bool { return failing[id] }))
	require.NoError(t, err)
	for i, r := range res {
		want := guard.Processed
		if failing[msgs[i].ID] {
			want = guard.Failed
		}
		require.Equal(t, want, r.Outcome, "%s: %v", msgs[i].ID, r.Err)
	}
	total, err := log.Total(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sum-8-301, total)
	st := log.Stats()
	require.EqualValues(t, 598, st.LateEvents)
	require.LessOrEqual(t, st.LateRounds, int64(12), "a round per hundred late events of a second")

	res, err = g.ProcessPoll(ctx, msgs, recordPoll(log, nil)) // the redelivery
	require.NoError(t, err)
	for i, r := range res {
		want := guard.Duplicate
		if failing[msgs[i].ID] {
			want = guard.Processed
		}
		require.Equal(t, want, r.Outcome, "%s: %v", msgs[i].ID, r.Err)
	}
	total, err = log.Total(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sum, total)
}

// TestProcessPollRacingConsumers delivers the same polls to two guards at once from eight
// goroutines, each redelivering what it could not acknowledge: every effect counts once.
func TestProcessPollRacingConsumers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	log, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)
	var guards []*guard.Guard
	for range 2 {
		g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithLease(2*time.Second))
		require.NoError(t, err)
		guards = append(guards, g)
	}
	msgs, sum := pollMessages(800, 4, time.Now().Add(-time.Hour))
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			left := msgs
			for round := 0; len(left) > 0; round++ {
				if round == 200 {
					errs <- fmt.Errorf("worker %d: %d messages left", w, len(left))
					return
				}
				res, err := guards[w%2].ProcessPoll(ctx, left, recordPoll(log, nil))
				if err != nil {
					errs <- err
					return
				}
				var again []guard.Message
				for i, r := range res {
					if r.Outcome != guard.Processed && r.Outcome != guard.Duplicate {
						again = append(again, left[i])
					}
				}
				left = again
			}
			errs <- nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total, err := log.Total(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sum, total)
}

// TestByKeyRunsKeysConcurrentlyInOrder runs a poll through ByKey: the first handlers of two
// keys wait for each other (they can only finish if they run at once), and each key's messages
// run in the order given, each with its claim in its ctx.
func TestByKeyRunsKeysConcurrentlyInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	g, err := guard.New(session, guard.WithKeyspace(ks))
	require.NoError(t, err)
	at := time.Now()
	var msgs []guard.Message
	for i := range 40 {
		msgs = append(msgs, guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: fmt.Sprint("m-", i),
			Payload: []byte([]string{"a", "b", "c", "d"}[i%4]), Time: at})
	}
	met := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	var mu sync.Mutex
	seen := map[string][]string{}
	handler := func(ctx context.Context, m guard.Message) error {
		key := string(m.Payload)
		if m.ID == "m-0" || m.ID == "m-1" { // the first of a and of b
			other := map[string]string{"a": "b", "b": "a"}[key]
			close(met[key])
			select {
			case <-met[other]:
			case <-time.After(30 * time.Second):
				return fmt.Errorf("%s ran alone", key)
			}
		}
		if _, ok := lwt.ClaimFromContext(ctx); !ok {
			return fmt.Errorf("%s: no claim in its ctx", m.ID)
		}
		mu.Lock()
		seen[key] = append(seen[key], m.ID)
		mu.Unlock()
		return nil
	}
	res, err := g.ProcessPoll(ctx, msgs, guard.ByKey(func(m guard.Message) string { return string(m.Payload) }, 4, handler))
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, guard.Processed, r.Outcome, "%s: %v", msgs[i].ID, r.Err)
	}
	for k, key := range []string{"a", "b", "c", "d"} {
		var want []string
		for i := k; i < 40; i += 4 {
			want = append(want, fmt.Sprint("m-", i))
		}
		assert.Equal(t, want, seen[key], key)
	}
}

// TestProcessPollWrongResultReleasesAll: a poll handler that returns errors for some of its
// messages only breaks its contract; every message is Failed with ErrPollResult and
// redelivered.
func TestProcessPollWrongResultReleasesAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	g, err := guard.New(session, guard.WithKeyspace(ks))
	require.NoError(t, err)
	msgs, _ := pollMessages(5, 1, time.Now())
	res, err := g.ProcessPoll(ctx, msgs, func(context.Context, []guard.Message) []error { return make([]error, 2) })
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, guard.Failed, r.Outcome)
		require.ErrorIs(t, r.Err, guard.ErrPollResult)
	}
	res, err = g.ProcessPoll(ctx, msgs, func(context.Context, []guard.Message) []error { return nil })
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, guard.Processed, r.Outcome, "released, so delivered again: %v", r.Err)
	}
	_, err = g.ProcessPoll(ctx, msgs, nil)
	require.ErrorIs(t, err, guard.ErrInvalidOption)
}
