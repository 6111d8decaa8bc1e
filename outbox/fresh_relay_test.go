package outbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestFreshRelayStartsAtLayout: a relay group with no cursor yet starts where the intents
// table's layout was recorded (less the clocks' allowance), not a retention back: with a day's
// retention and buckets of a second it would otherwise read 86,400 empty partitions per shard.
// An intent staged by a clock behind the layout's recorder, within the horizon, is still found.
func TestFreshRelayStartsAtLayout(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clk := testnode.NewClock(t0)
	e := clockedEnv(t, clk)
	ctx := ctxT(t)
	day := WithRetention(24 * time.Hour)
	e.stageAt(t, ctx, "o-first", t0) // the first writer: it records the layout at t0
	// A stager whose clock runs the horizon (2s) behind the recorder's.
	e.stageAt(t, ctx, "o-clock-behind", t0.Add(-2*time.Second))

	pub := &recorder{}
	r := e.relay(t, pub, day, fakeClock(clk.Now), WithRelayLease(time.Minute))
	var buckets int
	for i := 1; i <= 8; i++ {
		buckets += pollAt(t, ctx, r, clk, t0.Add(time.Duration(i)*time.Second)).Buckets
	}
	assert.ElementsMatch(t, []string{"o-first", "o-clock-behind"}, keysOf(pub), "each once")
	// From t0-4s (the layout's time less twice the horizon) each pass reads a shard's open
	// buckets and the one that closed: 136 reads here. Swept from a retention back, every pass
	// read DefaultMaxSweep closed buckets of each shard besides (over 2,000 in 8 passes).
	assert.Less(t, buckets, 4*DefaultMaxSweep, "partitions read by 8 passes over 4 shards")
}
