package outbox

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
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

// TestRepeatableCrashBeforeCommitWaitsThenRetries: a run's intent and the copy of its events
// are written (one write, just before its commit) and its commit never reaches the node: its
// store's session is gone, as in a process that died between the two. The intent has no
// record; the relay keeps it waiting (the run might still commit) instead of dropping it, and
// drops it once the retry has committed; the retry's events are published once. An intent whose
// run never commits is dropped after two horizons and the node's slack. A run that dies before
// that write leaves nothing.
func TestRepeatableCrashBeforeCommitWaitsThenRetries(t *testing.T) {
	var offset atomic.Int64 // how far the relay's clock runs ahead
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e := newEnv(t, lwt.WithLease(oneRoundLease))
	ctx := ctxT(t)
	crash := func(key string) {
		dying := testnode.RecommendedSession(t, e.ks)
		store, err := lwt.NewStore(dying, Table(e.ks), lwt.WithLease(oneRoundLease))
		require.NoError(t, err)
		_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
			if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: key, Payload: []byte("crashed")}); err != nil {
				return nil, err
			}
			dying.Close() // the intent is written with the box's session; the commit is not sent
			return []byte("crashed"), nil
		}, lwt.WithRepeatableFunction())
		require.Error(t, err, "the commit was never sent")
	}
	diedEarly := func(key string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
				if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: key, Payload: []byte("died")}); err != nil {
					return nil, err
				}
				runtime.Goexit() // the process dies in the function: nothing was written
				return nil, nil
			}, lwt.WithRepeatableFunction())
		}()
		<-done
	}
	diedEarly("o-died-early")
	crash("o-retried")
	crash("o-abandoned")

	pub := &recorder{}
	r := e.relay(t, pub, fakeClock(clock))
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
// commit after the relay gave up waiting for it, so its intent is refused and nothing commits.
func TestRepeatableRunLongerThanHorizonRefused(t *testing.T) {
	e := newEnv(t, lwt.WithLease(5*time.Second)) // the env's horizon is 2 s
	ctx := ctxT(t)
	_, err := e.placeRepeatable(ctx, e.store, "o-long", "w", 1)
	require.ErrorIs(t, err, ErrIntentLate)
	_, err = e.store.Get(ctx, lwt.IdempotencyKey("orders", "o-long"))
	assert.ErrorIs(t, err, lwt.ErrNotFound)
}

// TestRepeatableRunWritesIntentOnce: a repeatable run's intent, its arrival and the copy of its
// events are one write, sent after the function returned and before the commit; a run with a
// claim writes its intent at its first Stage and the copy when it seals, two writes.
func TestRepeatableRunWritesIntentOnce(t *testing.T) {
	e := newEnv(t, lwt.WithLease(oneRoundLease))
	ctx := ctxT(t)
	c := testnode.Cluster(t)
	c.Keyspace = e.ks
	writes := &intentWrites{table: DefaultIntentsTable}
	c.QueryObserver, c.BatchObserver = writes, writes
	session := testnode.Connect(t, c)
	t.Cleanup(session.Close)
	box, err := New(session, with[StagerOption](e.opts)...)
	require.NoError(t, err)
	e.box = box

	var inFunction int64
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "o-one-round"), func(ctx context.Context) ([]byte, error) {
		for i := range 2 {
			if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: "o-one-round", Payload: []byte{byte(i)}}); err != nil {
				return nil, err
			}
		}
		inFunction = writes.n.Load()
		return []byte("ok"), nil
	}, lwt.WithRepeatableFunction())
	require.NoError(t, err)
	assert.Zero(t, inFunction, "nothing written while the function runs")
	assert.Equal(t, int64(1), writes.n.Load(), "the intent, its arrival and the copy: one batch")

	writes.n.Store(0)
	_, err = e.placeOrder(ctx, "o-two-rounds", 2)
	require.NoError(t, err)
	assert.Equal(t, int64(2), writes.n.Load(), "the intent at the first Stage, the copy when sealed")

	pub := &recorder{}
	drain(t, ctx, e.relay(t, pub))
	assert.Len(t, pub.ids(), 4, "both runs' events, once each")
}

// intentWrites counts the statements and batches that write the intents table.
type intentWrites struct {
	table string
	n     atomic.Int64
}

func (w *intentWrites) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	if strings.HasPrefix(q.Statement, "UPDATE") || strings.HasPrefix(q.Statement, "INSERT") {
		if strings.Contains(q.Statement, "."+w.table+" ") || strings.Contains(q.Statement, `"`+w.table+`"`) {
			w.n.Add(1)
		}
	}
}

func (w *intentWrites) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	for _, s := range b.Statements {
		if strings.Contains(s, "."+w.table+" ") || strings.Contains(s, `"`+w.table+`"`) {
			w.n.Add(1)
			return
		}
	}
}
