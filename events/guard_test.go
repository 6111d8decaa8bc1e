package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/testnode"
)

func newGuard(t *testing.T, opts ...events.Option) *events.Guard {
	t.Helper()
	session, ks := testnode.NewSession(t)
	g, err := events.NewGuard(session, append([]events.Option{events.WithKeyspace(ks)}, opts...)...)
	require.NoError(t, err)
	return g
}

// effects counts what handlers did, per message id.
type effects struct {
	mu                      sync.Mutex
	runs, applied, failures map[string]int
}

func (e *effects) run(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs[id]++
	return e.runs[id]
}

func (e *effects) fail(id string) {
	e.mu.Lock()
	e.failures[id]++
	e.mu.Unlock()
}

func (e *effects) apply(id string) {
	e.mu.Lock()
	e.applied[id]++
	e.mu.Unlock()
}

// TestGuardReplayedStreamTakesEffectOnce replays 10,000 messages with 30% duplicates, a third
// of them delivered to two consumers at once; every tenth message's handler fails once and
// every 500th always fails. Every message's effect must happen exactly once, and the always
// failing ones must be reported as poison after exactly MaxAttempts handler runs.
//
// It is not parallel, so every goroutine that starts during it is its own and must have ended.
func TestGuardReplayedStreamTakesEffectOnce(t *testing.T) {
	const messages, maxAttempts, consumers = 10000, 3, 24
	g := newGuard(t, events.WithMaxAttempts(maxAttempts))
	ctx := context.Background()
	fx := &effects{runs: map[string]int{}, applied: map[string]int{}, failures: map[string]int{}}
	failsOnce := func(i int) bool { return i%10 == 3 }
	poison := func(i int) bool { return i%500 == 7 }
	handler := func(_ context.Context, m events.Message) error {
		var i int
		fmt.Sscanf(m.ID, "msg-%d", &i)
		if n := fx.run(m.ID); poison(i) || (failsOnce(i) && n == 1) {
			fx.fail(m.ID)
			return errors.New("handler failed")
		}
		fx.apply(m.ID)
		return nil
	}
	_, err := g.Process(ctx, events.Message{Scope: events.Scope{Group: "g", Topic: "warm"}, ID: "up"}, handler)
	require.NoError(t, err) // the session's connections are up before the snapshot
	running := goleak.IgnoreCurrent()

	var outcomes [6]atomic.Int64
	var poisoned sync.Map
	deliver := func(m events.Message) {
		out := redeliver(t, ctx, g, m, handler, "handler failed", func(o events.Outcome) { outcomes[o].Add(1) })
		if out == events.Poison {
			poisoned.Store(m.ID, true)
		}
	}
	type delivery struct {
		m      events.Message
		copies int // delivered to this many consumers at once
	}
	stream := make(chan delivery, 128)
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range stream {
				var pair sync.WaitGroup
				for range d.copies {
					pair.Add(1)
					go func() { defer pair.Done(); deliver(d.m) }()
				}
				pair.Wait()
			}
		}()
	}
	var duplicates []delivery
	for i := range messages {
		m := events.Message{Scope: events.Scope{Group: "billing", Topic: "payments", Partition: int32(i % 4)},
			ID: fmt.Sprintf("msg-%d", i), Payload: []byte(fmt.Sprintf("body-%d", i))}
		switch {
		case i%10 < 1: // 10%: two consumers at once
			stream <- delivery{m, 2}
		case i%10 < 3: // 20%: redelivered later
			stream <- delivery{m, 1}
			duplicates = append(duplicates, delivery{m, 1})
		default:
			stream <- delivery{m, 1}
		}
		if len(duplicates) > 200 {
			for _, d := range duplicates {
				stream <- d
			}
			duplicates = duplicates[:0]
		}
	}
	for _, d := range duplicates {
		stream <- d
	}
	close(stream)
	wg.Wait()

	for i := range messages {
		id := fmt.Sprintf("msg-%d", i)
		if poison(i) {
			_, reported := poisoned.Load(id)
			require.True(t, reported, "%s reported as poison", id)
			require.Equal(t, maxAttempts, fx.failures[id], "%s ran exactly MaxAttempts times", id)
			require.Zero(t, fx.applied[id])
			continue
		}
		require.Equal(t, 1, fx.applied[id], "%s took effect once", id)
		if failsOnce(i) {
			require.Equal(t, 1, fx.failures[id], "%s failed once", id)
		}
	}
	t.Logf("outcomes: processed %d, duplicate %d, in progress %d, failed %d, poison %d",
		outcomes[events.Processed].Load(), outcomes[events.Duplicate].Load(), outcomes[events.InProgress].Load(),
		outcomes[events.Failed].Load(), outcomes[events.Poison].Load())
	require.Positive(t, outcomes[events.Duplicate].Load())
	goleak.VerifyNone(t, running)
}

func TestGuardFailedHandlerLeavesMessageForRedelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t, events.WithMaxAttempts(2))
	m := events.Message{Scope: events.Scope{Group: "g", Topic: "t"}, ID: "m1", Payload: []byte("a")}
	boom := errors.New("boom")
	out, err := g.Process(ctx, m, func(context.Context, events.Message) error { return boom })
	require.Equal(t, events.Failed, out)
	require.ErrorIs(t, err, boom)
	runs := 0
	out, err = g.Process(ctx, m, func(context.Context, events.Message) error { runs++; return nil })
	require.NoError(t, err)
	require.Equal(t, events.Processed, out, "a failed handler did not mark the message")
	out, err = g.Process(ctx, m, func(context.Context, events.Message) error { runs++; return nil })
	require.NoError(t, err)
	require.Equal(t, events.Duplicate, out)
	require.Equal(t, 1, runs)

	m.Payload = []byte("b")
	out, err = g.Process(ctx, m, func(context.Context, events.Message) error { return nil })
	require.ErrorIs(t, err, events.ErrMessageReuse)
	require.Equal(t, events.Failed, out)

	p := events.Message{Scope: events.Scope{Group: "g", Topic: "t"}, ID: "poison"}
	for range 2 {
		out, err = g.Process(ctx, p, func(context.Context, events.Message) error { return boom })
	}
	require.Equal(t, events.Poison, out)
	var pe *events.PoisonError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "boom", pe.LastError)
	out, err = g.Process(ctx, p, func(context.Context, events.Message) error { t.Fatal("ran"); return nil })
	require.Equal(t, events.Poison, out, "poison is remembered")
	require.ErrorIs(t, err, events.ErrPoison)
}

func TestGuardProcessedIDsListsScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	g := newGuard(t, events.WithClock(clock.Now), events.WithRetention(24*time.Hour))
	scope := events.Scope{Group: "g", Topic: "t", Partition: 2}
	want := map[string]bool{}
	for i := range 30 {
		id := fmt.Sprint("id-", i)
		want[id] = true
		clock.Set(t0.Add(time.Duration(i) * time.Hour)) // spread over 30 hour buckets
		_, err := g.Process(ctx, events.Message{Scope: scope, ID: id}, func(context.Context, events.Message) error { return nil })
		require.NoError(t, err)
	}
	_, err := g.Process(ctx, events.Message{Scope: events.Scope{Group: "g", Topic: "t", Partition: 3}, ID: "other"},
		func(context.Context, events.Message) error { return nil })
	require.NoError(t, err)
	got := map[string]bool{}
	require.NoError(t, g.ProcessedIDs(ctx, scope, func(id string) error { got[id] = true; return nil }))
	require.Len(t, got, 25, "the last 24 h (25 hour buckets) of the scope, and no other scope")
	for id := range got {
		require.True(t, want[id])
	}
	stop := errors.New("stop")
	require.ErrorIs(t, g.ProcessedIDs(ctx, scope, func(string) error { return stop }), stop)
	require.ErrorIs(t, g.ProcessedIDs(ctx, events.Scope{Topic: "t"}, func(string) error { return nil }), events.ErrInvalidMessage)
}

func TestGuardBadInputGivesTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t, events.WithMaxPayload(16))
	ok := func(context.Context, events.Message) error { return nil }
	s := events.Scope{Group: "g", Topic: "t"}
	cases := []struct {
		m    events.Message
		want error
	}{
		{events.Message{Scope: s}, events.ErrInvalidMessage},
		{events.Message{Scope: events.Scope{Topic: "t"}, ID: "x"}, events.ErrInvalidMessage},
		{events.Message{Scope: events.Scope{Group: "g"}, ID: "x"}, events.ErrInvalidMessage},
		{events.Message{Scope: events.Scope{Group: "g", Topic: "t", Partition: -1}, ID: "x"}, events.ErrInvalidMessage},
		{events.Message{Scope: s, ID: strings.Repeat("x", 256)}, events.ErrInvalidMessage},
		{events.Message{Scope: s, ID: "\xc3"}, events.ErrInvalidMessage},
		{events.Message{Scope: s, ID: "x", Payload: make([]byte, 17)}, events.ErrPayloadTooLarge},
	}
	for _, tc := range cases {
		out, err := g.Process(ctx, tc.m, ok)
		require.ErrorIs(t, err, tc.want, "%+v", tc.m.Scope)
		require.Equal(t, events.Failed, out)
	}
	_, err := g.Process(ctx, events.Message{Scope: s, ID: "x"}, nil)
	require.ErrorIs(t, err, events.ErrInvalidOption)
	for _, o := range []events.Option{events.WithRetention(time.Second), events.WithLease(time.Millisecond),
		events.WithLease(30 * 24 * time.Hour), events.WithMaxAttempts(0), events.WithMaxPayload(0),
		events.WithClock(nil), events.WithKeyspace("a b"), events.WithMessageTables("x", "-"),
		events.WithConsistency(gocql.One), events.WithSerialConsistency(gocql.SerialConsistency(0)),
		events.WithBatchWindow(0), events.WithBatchWindow(1500 * time.Millisecond), events.WithBatchWindow(25 * time.Hour),
		events.WithBatchBuckets(0), events.WithBatchBuckets(1025), events.WithBatchTable("no such;table")} {
		_, err := events.NewGuard(&gocql.Session{}, o)
		require.ErrorIs(t, err, events.ErrInvalidOption)
	}
}

func FuzzValidateMessage(f *testing.F) {
	f.Add("g", "t", int32(0), "id", 3)
	f.Add("", "t", int32(-1), "\xff", 0)
	f.Add("g", strings.Repeat("t", 256), int32(7), "id", 1<<23)
	f.Fuzz(func(t *testing.T, group, topic string, partition int32, id string, payload int) {
		if payload < 0 || payload > 8<<20 {
			return
		}
		err := events.ValidateMessage(events.Message{Scope: events.Scope{Group: group, Topic: topic, Partition: partition},
			ID: id, Payload: make([]byte, payload)})
		if err != nil && !errors.Is(err, events.ErrInvalidMessage) && !errors.Is(err, events.ErrPayloadTooLarge) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && (group == "" || topic == "" || id == "" || partition < 0) {
			t.Fatal("accepted an invalid message")
		}
	})
}
