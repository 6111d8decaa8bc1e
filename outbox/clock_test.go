package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestStagerBehindRelayLosesNothing: a stager whose clock (its store's and its outbox's) runs
// 150 s behind its relay's, with the default layout (buckets of a minute closed a minute after
// their end). Every operation either commits and has its event published, or is refused with
// ErrClockOffset and commits nothing: none is lost silently. Before the stager measured its
// clock, its 40 intents went into buckets the relay had already closed, and none was
// published.
func TestStagerBehindRelayLosesNothing(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := ctxT(t)
	behind := func() time.Time { return time.Now().Add(-150 * time.Second) }
	store, err := lwt.NewStore(session, Table(ks), lwt.WithClock(behind))
	require.NoError(t, err)
	opts := []Option{WithKeyspace(ks), WithShards(4)}
	box, err := New(session, with[StagerOption](opts, WithClock(behind))...)
	require.NoError(t, err)
	pub := &recorder{}
	r, err := NewRelay(session, pub, with[RelayOption](opts, WithRelayLease(4*time.Second))...)
	require.NoError(t, err)
	t.Cleanup(func() { r.Release(context.Background()) })
	_, err = r.Poll(ctx) // the relay works before the stager stages: its buckets are open
	require.NoError(t, err)

	const ops = 40
	var mu sync.Mutex
	var committed []string
	refused := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < ops; i += 8 {
				key := fmt.Sprintf("o-%d", i)
				_, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
					return []byte("ok"), box.Stage(ctx, Event{Type: "order.placed", Key: key})
				})
				mu.Lock()
				switch {
				case err == nil:
					committed = append(committed, key)
				case errors.Is(err, ErrClockOffset):
					refused++
				default:
					t.Errorf("%s: %v", key, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, ops, len(committed)+refused)
	st := drain(t, ctx, r)
	assert.ElementsMatch(t, committed, keysOf(pub), "every committed operation's event, once")
	assert.Equal(t, 0, st.Waiting)

	c := box.Clock()
	assert.True(t, c.Measured)
	assert.InDelta(t, float64(150*time.Second), float64(c.Offset), float64(c.Bound+20*time.Millisecond), "the stager's offset")
	assert.Equal(t, int64(refused), c.Refusals, "every refusal counted")
	assert.True(t, st.Clock.Measured, "the relay's reading is in its Stats")
	assert.Less(t, st.Clock.Offset.Abs(), st.Clock.Bound+20*time.Millisecond, "the relay's clock is the cluster's")
	t.Logf("committed %d, refused %d; stager offset %v ±%v", len(committed), refused, c.Offset, c.Bound)
}

// TestStageRefusedWithoutOffset: a stager that cannot measure its offset refuses the run with
// ErrClockOffset, the offset and the bound in the error, and commits nothing; a relay that
// cannot refuses its pass the same way.
func TestStageRefusedWithoutOffset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t)
	closed := testnode.Connect(t, testnode.Cluster(t))
	closed.Close()
	box, err := New(closed, with[StagerOption](e.opts)...)
	require.NoError(t, err)
	f := *e
	f.box = box
	_, err = f.placeOrder(ctx, "o-unmeasured", 1)
	require.ErrorIs(t, err, ErrClockOffset)
	var oe *clock.OffsetError
	require.ErrorAs(t, err, &oe)
	assert.False(t, oe.Measured)
	assert.Equal(t, 250*time.Millisecond, oe.Limit, "an eighth of the 2 s horizon")
	assert.Equal(t, int64(1), box.Clock().Refusals)
	res, err := e.placeOrder(ctx, "o-unmeasured", 1) // a retry on a measured stager runs it: nothing committed before
	require.NoError(t, err)
	assert.False(t, res.Replay)

	r, err := NewRelay(closed, &recorder{}, e.relayOpts()...)
	require.NoError(t, err)
	st, err := r.Poll(ctx)
	require.ErrorIs(t, err, ErrClockOffset)
	assert.Equal(t, int64(1), st.Clock.Refusals)
}
