package outbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRelayRowsRead measures what a relay's passes cost the node: orders staged at a steady
// rate while the relay polls, then drained, and the intent rows read per published intent
// (Stats.RowsRead over Stats.Published). Every published intent was read at least once; the
// figure is printed, since it grows with the rate and the window (bucket + horizon) over the
// poll interval: a pass reads every open partition whole.
func TestRelayRowsRead(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	rec := &recorder{}
	r := e.relay(t, rec)
	var total Stats
	const orders, every = 60, 50 * time.Millisecond
	last := time.Now()
	for i := range orders {
		_, err := e.placeOrder(ctx, fmt.Sprintf("o-reads-%03d", i), 1)
		require.NoError(t, err)
		if time.Since(last) >= 4*every {
			st, err := r.Poll(ctx)
			require.NoError(t, err)
			total.add(st)
			last = time.Now()
		}
		time.Sleep(every)
	}
	total.add(drain(t, ctx, r))
	require.Equal(t, orders, total.Published, "every staged event published once")
	require.GreaterOrEqual(t, total.RowsRead, total.Published, "a published intent was read")
	t.Logf("relay rows read per published intent: %.1f (%d rows, %d intents)",
		float64(total.RowsRead)/float64(total.Published), total.RowsRead, total.Published)
}
