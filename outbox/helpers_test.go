package outbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// env is a fresh keyspace with a store whose runs may stage events, an outbox, and fast
// buckets: one second wide, closed two seconds after their end.
type env struct {
	session *gocql.Session
	ks      string
	store   *lwt.Store
	box     *Outbox
	opts    []Option
}

func newEnv(t *testing.T, storeOpts ...lwt.StoreOption) *env {
	t.Helper()
	session, ks := testnode.NewSession(t)
	store, err := lwt.NewStore(session, Table(ks), storeOpts...)
	require.NoError(t, err)
	opts := []Option{WithKeyspace(ks), WithBucket(time.Second), WithHorizon(2 * time.Second), WithRetention(30 * time.Second),
		WithShards(4)}
	box, err := New(session, with[StagerOption](opts)...)
	require.NoError(t, err)
	return &env{session: session, ks: ks, store: store, box: box, opts: opts}
}

// with lists the shared options and more as the options of one constructor (StagerOption,
// RelayOption or AdminOption), each of which an Option is.
func with[T any](shared []Option, more ...T) []T {
	out := make([]T, 0, len(shared)+len(more))
	for _, o := range shared {
		out = append(out, any(o).(T))
	}
	return append(out, more...)
}

// relayOpts is the env's options for a relay, a relay lease of 4s and more.
func (e *env) relayOpts(more ...RelayOption) []RelayOption {
	return append(with[RelayOption](e.opts, WithRelayLease(4*time.Second)), more...)
}

func (e *env) relay(t *testing.T, pub Publisher, opts ...RelayOption) *Relay {
	t.Helper()
	r, err := NewRelay(e.session, pub, e.relayOpts(opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { r.Release(context.Background()) })
	return r
}

// placeOrder runs key under ExecuteOnce and stages n events of it.
func (e *env) placeOrder(ctx context.Context, key string, n int) (lwt.Result, error) {
	return e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
		for i := range n {
			if err := e.box.Stage(ctx, Event{Type: "order.placed", Key: key, Payload: []byte{byte(i)}, Headers: map[string]string{"n": "x"}}); err != nil {
				return nil, err
			}
		}
		return []byte("ok"), nil
	})
}

// recorder is a Publisher that keeps every message it accepted.
type recorder struct {
	mu   sync.Mutex
	msgs []Message
	fail error // returned after recording, as a relay that crashed after the broker accepted
}

func (p *recorder) Publish(_ context.Context, msgs []Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, msgs...)
	return p.fail
}

func (p *recorder) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.msgs))
	for i, m := range p.msgs {
		out[i] = m.ID
	}
	return out
}

// drain polls r until every intent staged before the call has settled (none waiting), or fails.
// A pass finds an intent the arrival lag after its staging (WithArrivalLag): drain goes on
// until a quiet pass began that long after the call.
func drain(t *testing.T, ctx context.Context, r *Relay) Stats {
	t.Helper()
	var total Stats
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for quiet, began := 0, start; quiet < 2 || !began.After(start.Add(r.cfg.lag)); {
		require.True(t, time.Now().Before(deadline), "the relay never settled")
		began = time.Now()
		st, err := r.Poll(ctx)
		require.NoError(t, err)
		total.add(st)
		// A pass counts as quiet only with every shard held: a relay whose lease ran out between
		// passes (a test that paused longer than the lease on a loaded machine) gives the shard
		// up quietly and cannot claim it again until the server ends the old lease, so its
		// passes read nothing of that shard's intents for a while.
		if st.Waiting == 0 && st.Published == 0 && st.Settled == 0 && st.Shards == min(r.cfg.shards, r.cfg.maxShards) {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	return total
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fakeClock is WithClock for a clock that simulates history (moved by hand, or set hours
// ahead): WithoutClockCheck, as the clock is meant to be off the cluster's.
func fakeClock(now func() time.Time) Option {
	return func(c *config) error {
		if err := WithClock(now)(c); err != nil {
			return err
		}
		return WithoutClockCheck()(c)
	}
}
