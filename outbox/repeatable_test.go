package outbox

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// oneRoundLease is the lease of the stores whose runs are repeatable: a repeatable run must
// commit within it, and Stage accepts it only if that is within the horizon (2 s here).
const oneRoundLease = 2 * time.Second

// placeRepeatable runs key with lwt.WithRepeatableFunction on store and stages n events whose
// payload names who staged them.
func (e *env) placeRepeatable(ctx context.Context, store *lwt.Store, key, who string, n int) (lwt.Result, error) {
	return store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
		for i := range n {
			if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: key, Payload: []byte(fmt.Sprintf("%s/%d", who, i))}); err != nil {
				return nil, err
			}
		}
		return []byte(who), nil
	}, lwt.WithRepeatableFunction())
}

// TestRepeatableRunsCommitEventsOnce: 64 goroutines over 4 stores race one order in one round
// each: every one stages its events, one insert commits its result and events, and the relay
// publishes those once; the losers' intents are dropped.
func TestRepeatableRunsCommitEventsOnce(t *testing.T) {
	e := newEnv(t, lwt.WithLease(oneRoundLease))
	ctx := ctxT(t)
	stores := []*lwt.Store{e.store}
	for range 3 {
		s, err := lwt.NewStore(e.session, Table(e.ks), lwt.WithLease(oneRoundLease))
		require.NoError(t, err)
		stores = append(stores, s)
	}
	const workers = 64
	var fresh atomic.Int32
	results := make([]string, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := e.placeRepeatable(ctx, stores[w%len(stores)], "o-race", fmt.Sprintf("w%d", w), 2)
			if !assert.NoError(t, err) {
				return
			}
			if !res.Replay {
				fresh.Add(1)
			}
			results[w] = string(res.Value)
		}()
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, fresh.Load(), "one run committed")
	winner := results[0]
	for w, r := range results {
		assert.Equal(t, winner, r, "worker %d", w)
	}

	pub := &recorder{}
	st := drain(t, ctx, e.relay(t, pub))
	require.Len(t, pub.msgs, 2, "the committed run's events, once")
	for i, m := range pub.msgs {
		assert.Equal(t, EventID("orders", "o-race", i), m.ID)
		assert.Equal(t, fmt.Sprintf("%s/%d", winner, i), string(m.Payload), "the winner's events")
	}
	assert.Equal(t, 1, st.Settled-st.Dropped, "one intent published")
	t.Logf("intents: %d settled, %d dropped", st.Settled, st.Dropped)
}

// TestRepeatableCrashBeforeCommitWaitsThenRetries: a run stages its events and dies before its
// commit. Its intent has no record; the relay keeps it waiting (the run might still commit)
// instead of dropping it, and drops it once the retry has committed; the retry's events are
// published once. An intent whose run never commits is dropped after two horizons and the
// node's slack.
func TestRepeatableCrashBeforeCommitWaitsThenRetries(t *testing.T) {
	var offset atomic.Int64 // how far the relay's clock runs ahead
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e := newEnv(t, lwt.WithLease(oneRoundLease))
	ctx := ctxT(t)
	crash := func(key string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
				if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: key, Payload: []byte("crashed")}); err != nil {
					return nil, err
				}
				runtime.Goexit() // the process dies here: the function ran, the commit never happened
				return nil, nil
			}, lwt.WithRepeatableFunction())
		}()
		<-done
	}
	crash("o-retried")
	crash("o-abandoned")

	pub := &recorder{}
	r := e.relay(t, pub, WithClock(clock))
	st, err := r.Poll(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Waiting, "no record yet: the runs may still commit")
	assert.Zero(t, st.Dropped)

	res, err := e.placeRepeatable(ctx, e.store, "o-retried", "retry", 1)
	require.NoError(t, err)
	require.False(t, res.Replay)
	require.Eventually(t, func() bool {
		st, err := r.Poll(ctx)
		return err == nil && st.Waiting == 1 && len(pub.ids()) == 1
	}, 30*time.Second, 100*time.Millisecond, "the retry's events are published and the crashed run's intent dropped")
	require.Equal(t, "retry/0", string(pub.msgs[0].Payload))

	// Two horizons (2 s each here) and the node's slack later, the abandoned intent is dropped.
	offset.Store(int64(2*2*time.Second + casSlack + time.Second))
	st = drain(t, ctx, r)
	assert.Equal(t, 1, st.Dropped, "the abandoned run's intent")
	assert.Len(t, pub.ids(), 1, "nothing else published")
}

// TestRepeatableRunLongerThanHorizonRefused: a run whose store's lease exceeds the horizon could
// commit after the relay gave up waiting for it, so its Stage is refused and nothing commits.
func TestRepeatableRunLongerThanHorizonRefused(t *testing.T) {
	e := newEnv(t, lwt.WithLease(5*time.Second)) // the env's horizon is 2 s
	ctx := ctxT(t)
	_, err := e.placeRepeatable(ctx, e.store, "o-long", "w", 1)
	require.ErrorIs(t, err, ErrIntentLate)
	_, err = e.store.Get(ctx, lwt.IdempotencyKey("orders", "o-long"))
	assert.ErrorIs(t, err, lwt.ErrNotFound)
}
