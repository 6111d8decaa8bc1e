package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// TestStagedEventsCommittedWithCompletion: a run's events are published once it committed, in
// staging order with stable ids; a replay of the key publishes nothing new.
func TestStagedEventsCommittedWithCompletion(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	res, err := e.placeOrder(ctx, "o-1", 3)
	require.NoError(t, err)
	require.False(t, res.Replay)

	var cellBytes []byte
	require.NoError(t, e.session.Query(`SELECT outbox FROM "`+e.ks+`".idempotency_keys WHERE namespace = 'orders' AND key = 'o-1'`).Scan(&cellBytes))
	assert.NotEmpty(t, cellBytes, "the events are in the record's row")

	pub := &recorder{}
	r := e.relay(t, pub)
	st := drain(t, ctx, r)
	assert.Equal(t, 3, st.Published)
	require.Len(t, pub.msgs, 3)
	for i, m := range pub.msgs {
		assert.Equal(t, EventID("orders", "o-1", i), m.ID)
		assert.Equal(t, i, m.Sequence)
		assert.Equal(t, []byte{byte(i)}, m.Payload)
		assert.Equal(t, "order.placed", m.Type)
		assert.Equal(t, "o-1", m.Key)
		assert.Equal(t, int64(1), m.Fence)
	}

	res, err = e.placeOrder(ctx, "o-1", 3)
	require.NoError(t, err)
	require.True(t, res.Replay)
	drain(t, ctx, r)
	assert.Len(t, pub.msgs, 3, "a replay publishes nothing new")
}

// TestUncommittedRunsPublishNothing: released, failed and fenced-off runs staged events that
// never commit; the relay drops their intents.
func TestUncommittedRunsPublishNothing(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	boom := errors.New("boom")
	stageThen := func(key string, err error) {
		_, got := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
			require.NoError(t, e.box.Stage(ctx, Event{Type: "never"}))
			return []byte("x"), err
		})
		require.Error(t, got)
	}
	stageThen("released", boom)
	stageThen("failed", lwt.Permanent(boom))

	// Fenced off: while the run is in its function, an operator releases the key and another
	// run commits it without events; the first run's completion fails its condition.
	key := lwt.IdempotencyKey("orders", "fenced")
	staged := make(chan struct{})
	finish := make(chan struct{})
	var first error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, first = e.store.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
			err := e.box.Stage(ctx, Event{Type: "never"})
			close(staged)
			<-finish
			return []byte("late"), err
		})
	}()
	<-staged
	_, err := e.store.ReleaseKey(ctx, key, lwt.Force())
	require.NoError(t, err)
	other, err := lwt.NewStore(e.session, Table(e.ks)) // another process: this one knows the first run is in flight
	require.NoError(t, err)
	_, err = other.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("second"), nil }, lwt.WithWait())
	require.NoError(t, err)
	close(finish)
	wg.Wait()
	require.ErrorIs(t, first, lwt.ErrLeaseLost)

	pub := &recorder{}
	st := drain(t, ctx, e.relay(t, pub))
	assert.Empty(t, pub.msgs)
	assert.Equal(t, 3, st.Dropped, "three intents dropped")
}

// TestRelayCrashBetweenPublishAndMarkRepublishes: the broker accepted the messages but the relay
// died before marking them; the next relay publishes the same ids again.
func TestRelayCrashBetweenPublishAndMarkRepublishes(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.placeOrder(ctx, "o-crash", 2)
	require.NoError(t, err)

	crashed := &recorder{fail: errors.New("relay killed")}
	r1, err := NewRelay(e.session, crashed, e.relayOpts()...)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, _ = r1.Poll(ctx); return len(crashed.ids()) == 2 }, 20*time.Second, 100*time.Millisecond)
	// r1 is abandoned without Release, as a killed process is; its leases run out on the server.

	pub := &recorder{}
	r2 := e.relay(t, pub)
	require.Eventually(t, func() bool { _, _ = r2.Poll(ctx); return len(pub.ids()) == 2 }, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, crashed.ids()[:2], pub.ids(), "the same ids, in the same order")
	drain(t, ctx, r2)
	assert.Len(t, pub.ids(), 2)
}

// blockingPublisher blocks its first call until released, as a relay frozen mid-publish.
type blockingPublisher struct {
	recorder
	entered, release chan struct{}
	once             sync.Once
}

func (p *blockingPublisher) Publish(ctx context.Context, msgs []Message) error {
	p.once.Do(func() {
		close(p.entered)
		<-p.release
	})
	return p.recorder.Publish(ctx, msgs)
}

// TestFrozenRelayFencedOff: a relay frozen past its lease loses its shard to another relay,
// which publishes and marks; when the frozen one wakes, its marks fail their condition.
func TestFrozenRelayFencedOff(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.placeOrder(ctx, "o-frozen", 1)
	require.NoError(t, err)

	frozen := &blockingPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	r1 := e.relay(t, frozen)
	var frozenErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, err := r1.Poll(ctx)
			select {
			case <-frozen.entered:
				frozenErr = err
				return
			default:
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	<-frozen.entered

	pub := &recorder{}
	r2 := e.relay(t, pub)
	require.Eventually(t, func() bool { _, _ = r2.Poll(ctx); return len(pub.ids()) == 1 }, 30*time.Second, 200*time.Millisecond,
		"the second relay takes the shard over once the server ends the first one's lease")
	drain(t, ctx, r2)
	close(frozen.release)
	<-done
	require.ErrorIs(t, frozenErr, ErrFenced, "the frozen relay's marks are rejected")
	assert.Equal(t, pub.ids(), frozen.ids(), "the frozen relay sent the same id (at least once)")
	// Awake, the first relay finds its other leases gone too, and publishes nothing more.
	st, err := r1.Poll(ctx)
	if err != nil {
		require.ErrorIs(t, err, ErrFenced)
	}
	assert.Zero(t, st.Published)
	st, err = r1.Poll(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Published)
	assert.Zero(t, st.Shards, "the second relay holds every shard")
	assert.Len(t, pub.ids(), 1)
}

// TestManyGoroutinesSameKeys: 32 goroutines place 60 orders, each many times, while two relays
// run; every committed order's event is published, none of an order that never committed.
func TestManyGoroutinesSameKeys(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	const workers, orders = 32, 60
	pub := &recorder{}
	relays := []*Relay{e.relay(t, pub, WithMaxShards(2)), e.relay(t, pub, WithMaxShards(2))}
	rctx, stop := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	for _, r := range relays {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			_ = r.Run(rctx, nil)
		}()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed := map[string]bool{}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range orders {
				k := fmt.Sprintf("o-%d", (i+w)%orders)
				// Orders divisible by 7 always fail: they must publish nothing.
				_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", k), func(ctx context.Context) ([]byte, error) {
					if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: k}); err != nil {
						return nil, err
					}
					if (i+w)%orders%7 == 0 {
						return nil, errors.New("declined")
					}
					return []byte("ok"), nil
				}, lwt.WithWait())
				if err == nil {
					mu.Lock()
					committed[k] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	var want []string
	for k := range committed {
		want = append(want, EventID("orders", k, 0))
	}
	sort.Strings(want)
	require.Eventually(t, func() bool {
		got := map[string]bool{}
		for _, id := range pub.ids() {
			got[id] = true
		}
		return len(got) == len(want)
	}, 60*time.Second, 200*time.Millisecond)
	stop()
	rwg.Wait()
	got := map[string]bool{}
	for _, id := range pub.ids() {
		got[id] = true
	}
	var ids []string
	for id := range got {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	assert.Equal(t, want, ids, "exactly the committed orders' events")
	assert.Len(t, want, orders-orders/7-1)
}

// TestStageOutsideRun: Stage outside a claimed run, or under a store without the outbox column,
// is ErrNoRun; bad events are ErrInvalidEvent and stage nothing.
func TestStageOutsideRun(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	require.ErrorIs(t, e.box.Stage(ctx, Event{Type: "x"}), ErrNoRun)
	plain, err := lwt.NewStore(e.session, lwt.IdempotencyKeys(e.ks))
	require.NoError(t, err)
	_, err = plain.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "plain"), func(ctx context.Context) ([]byte, error) {
		return nil, e.box.Stage(ctx, Event{Type: "x"})
	})
	require.ErrorIs(t, err, ErrNoRun)
	require.ErrorContains(t, err, "outbox.Table(keyspace)", "the error says which table to build the store on")
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "bad"), func(ctx context.Context) ([]byte, error) {
		return nil, e.box.Stage(ctx, Event{Type: ""})
	})
	require.ErrorIs(t, err, ErrInvalidEvent)
	// A run that ignores a refused Stage fails for good (see TestRefusalsAndBadArguments).
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "ignored"), func(ctx context.Context) ([]byte, error) {
		_ = e.box.Stage(ctx, Event{Type: "x", Payload: make([]byte, DefaultMaxSize)})
		return []byte("ok"), nil
	})
	require.ErrorIs(t, err, ErrInvalidEvent)
	// A run that ignores a Stage whose intent was not written (here: another layout than the
	// stored one) has its completion refused and is released, so a retry runs it again.
	other, err := New(e.session, with[StagerOption](e.opts, WithShards(5))...)
	require.NoError(t, err)
	_, err = e.placeOrder(ctx, "stores-the-layout", 1)
	require.NoError(t, err)
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "ignored-intent"), func(ctx context.Context) ([]byte, error) {
		_ = other.Stage(ctx, Event{Type: "x"})
		return []byte("ok"), nil
	})
	require.ErrorIs(t, err, ErrNoIntent)
}
