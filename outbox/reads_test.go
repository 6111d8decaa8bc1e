package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRelayRowsRead measures what a relay's passes cost the node at two rates: orders staged
// at a steady rate by concurrent clients while the relay polls, then drained, and the rows
// read (arrivals and intents, Stats.RowsRead) per published intent, every bucket's last sweep
// included. A pass reads only the arrivals staged since the last one, and the last sweep of a
// bucket reads its intents once: about two rows per intent, whatever the rate; the bound is 3.
func TestRelayRowsRead(t *testing.T) {
	for _, c := range []struct {
		rate, orders, clients int
	}{{20, 60, 2}, {200, 600, 16}} {
		t.Run(fmt.Sprintf("%d/s", c.rate), func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			rec := &recorder{}
			r := e.relay(t, rec)
			total := placeWhilePolling(t, ctx, e, r, c.rate, c.orders, c.clients)
			total.add(drain(t, ctx, r))
			total.add(untilSwept(t, ctx, r, time.Now()))
			require.Equal(t, c.orders, total.Published, "every staged event published")
			assert.Len(t, uniq(rec.ids()), c.orders, "each once")
			perIntent := float64(total.RowsRead) / float64(total.Published)
			t.Logf("%d orders at %d/s: relay rows read per published intent: %.2f (%d rows, %d intents)",
				c.orders, c.rate, perIntent, total.RowsRead, total.Published)
			assert.LessOrEqual(t, perIntent, 3.0, "rows read per published intent")
			assert.GreaterOrEqual(t, total.RowsRead, total.Published, "a published intent was read")
		})
	}
}

// placeWhilePolling places orders at rate from clients goroutines while r polls every
// DefaultPollInterval, and returns the passes' stats.
func placeWhilePolling(t *testing.T, ctx context.Context, e *env, r *Relay, rate, orders, clients int) Stats {
	t.Helper()
	var (
		mu       sync.Mutex
		total    Stats
		pollErrs []error
		placeErr []error
	)
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		tick := time.NewTicker(DefaultPollInterval)
		defer tick.Stop()
		for {
			st, err := r.Poll(ctx)
			mu.Lock()
			total.add(st)
			if err != nil {
				pollErrs = append(pollErrs, err)
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := e.placeOrder(ctx, fmt.Sprintf("o-reads-%05d", i), 1); err != nil {
					mu.Lock()
					placeErr = append(placeErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := range orders {
		<-tick.C
		next <- i
	}
	tick.Stop()
	close(next)
	wg.Wait()
	close(stop)
	<-polled
	require.Empty(t, placeErr)
	require.Empty(t, pollErrs)
	return total
}

// untilSwept polls r until every bucket of an intent staged by last has been swept (its horizon
// passed): the cost of a bucket includes its last sweep.
func untilSwept(t *testing.T, ctx context.Context, r *Relay, last time.Time) Stats {
	t.Helper()
	var total Stats
	closed := time.Unix(r.cfg.bucketOf(last), 0).Add(r.cfg.bucket + r.cfg.horizon)
	for !time.Now().After(closed.Add(DefaultPollInterval)) {
		time.Sleep(DefaultPollInterval)
		st, err := r.Poll(ctx)
		require.NoError(t, err)
		total.add(st)
	}
	st, err := r.Poll(ctx)
	require.NoError(t, err)
	total.add(st)
	require.Zero(t, total.Published, "nothing left for the sweeps to publish")
	return total
}

func uniq(ids []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}
