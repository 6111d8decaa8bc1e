package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPublisherTurn: one holder at a time; a waiter's callback runs while it waits, and the
// waiter gets its turn once the holder releases; an error of the callback or the waiter's ctx
// ends its wait.
func TestPublisherTurn(t *testing.T) {
	var p publisherTurn
	ctx := context.Background()
	require.NoError(t, p.acquire(ctx, time.Hour, nil))

	var holders, maxHolders atomic.Int32
	waiting := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			told := false
			err := p.acquire(ctx, time.Millisecond, func() error {
				if !told {
					told = true
					waiting <- struct{}{}
				}
				return nil
			})
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			if n := holders.Add(1); n > maxHolders.Load() {
				maxHolders.Store(n)
			}
			holders.Add(-1)
			p.release()
		}()
	}
	for range 4 {
		<-waiting // every one waits, its callback running, while the turn is held
	}
	p.release()
	wg.Wait()
	assert.EqualValues(t, 1, maxHolders.Load(), "one holder at a time")

	require.NoError(t, p.acquire(ctx, time.Hour, nil))
	stop := errors.New("lease lost")
	assert.ErrorIs(t, p.acquire(ctx, time.Millisecond, func() error { return stop }), stop)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, p.acquire(cctx, time.Hour, nil), context.Canceled)
	p.release()
}

// TestSlowPublisherKeepsEveryLease: a pass works its shards at once but calls the publisher one
// call at a time, so shards queue for it. With a 3 s lease, four messages a call and every call
// taking 600 ms, the pass's sixteen calls take about 10 s, and a shard makes its four calls
// between the others'. The shards that wait, and those done, have their leases renewed as the
// calls go by: after the pass the relay still holds the env's four shards, and every order was
// published once.
func TestSlowPublisherKeepsEveryLease(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var keys []string
	for i := range 64 {
		key := fmt.Sprintf("o-slow-%d", i)
		keys = append(keys, key)
		_, err := e.placeOrder(ctx, key, 1)
		require.NoError(t, err)
	}
	const lease, call = 3 * time.Second, 600 * time.Millisecond
	pub := &recorder{}
	var calls atomic.Int32
	slow := PublisherFunc(func(ctx context.Context, msgs []Message) error {
		calls.Add(1)
		time.Sleep(call) // a broker that takes its time, within the publish deadline (2/5 of the lease)
		return pub.Publish(ctx, msgs)
	})
	r := e.relay(t, slow, WithRelayLease(lease), WithArrivalLag(time.Millisecond), WithPublishBatch(4))
	start := time.Now()
	st, err := r.Poll(ctx)
	took := time.Since(start)
	require.NoError(t, err, "no shard lost its lease in the pass")
	assert.Zero(t, st.LeasesLost)
	assert.Zero(t, st.Fenced)
	assert.Len(t, r.Held(), 4, "the env's shards")
	assert.ElementsMatch(t, keys, keysOf(pub), "each order once")
	assert.Greater(t, took, 2*lease, "the pass outlasted two leases: %d calls", calls.Load())
}
