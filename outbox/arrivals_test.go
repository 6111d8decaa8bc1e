package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// clockedEnv is newEnv whose stagers read clk (the relays of the tests read it too), so the
// tests place intents before or behind a relay's cursor by hand.
func clockedEnv(t *testing.T, clk *testnode.Clock) *env {
	t.Helper()
	e := newEnv(t)
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.Now))...)
	require.NoError(t, err)
	e.box = box
	return e
}

// stageAt places order key with a stager whose clock reads at.
func (e *env) stageAt(t *testing.T, ctx context.Context, key string, at time.Time) {
	t.Helper()
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(func() time.Time { return at }))...)
	require.NoError(t, err)
	f := *e
	f.box = box
	_, err = f.placeOrder(ctx, key, 1)
	require.NoError(t, err)
}

// pollAt advances clk to at and makes one pass of r.
func pollAt(t *testing.T, ctx context.Context, r *Relay, clk *testnode.Clock, at time.Time) Stats {
	t.Helper()
	clk.Set(at)
	st, err := r.Poll(ctx)
	require.NoError(t, err)
	return st
}

func keysOf(p *recorder) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.msgs))
	for i, m := range p.msgs {
		out[i] = m.OpKey
	}
	return out
}

// TestStragglersPublishedBySweep: intents no arrival announced in time are published, once, by
// their bucket's last sweep: one without an arrival (a stager older than
// 019_outbox_arrivals.cql, or an arrival that failed to land) and one whose arrival is behind
// the relay's cursor (a staging write slower than the arrival lag, or a stager's clock behind
// the relay's). One staged beside them in time is published through its arrival, before its
// bucket closes.
func TestStragglersPublishedBySweep(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clk := testnode.NewClock(t0)
	e := clockedEnv(t, clk)
	ctx := ctxT(t)
	pub := &recorder{}
	// Buckets of 1s, a horizon of 2s: bucket b closes at b+3s.
	r := e.relay(t, pub, fakeClock(clk.Now), WithRelayLease(20*time.Second))
	pollAt(t, ctx, r, clk, t0)                    // the claim: buckets from t0+1s on are this relay's alone
	pollAt(t, ctx, r, clk, t0.Add(3*time.Second)) // buckets t0+1s to t0+3s are read from their start

	e.stageAt(t, ctx, "o-on-time", t0.Add(3*time.Second))
	e.stageAt(t, ctx, "o-no-arrival", t0.Add(3*time.Second))
	deleteArrival(t, ctx, e, "o-no-arrival")
	st := pollAt(t, ctx, r, clk, t0.Add(4500*time.Millisecond))
	assert.Equal(t, []string{"o-on-time"}, keysOf(pub), "found through its arrival, before its bucket closed")
	assert.Equal(t, 1, st.RowsRead, "the one arrival")

	// Staged at t0+2.5s, in bucket t0+2s, once the relay read its arrivals up to the bucket's end.
	e.stageAt(t, ctx, "o-behind", t0.Add(2500*time.Millisecond))
	pollAt(t, ctx, r, clk, t0.Add(4600*time.Millisecond))
	assert.Equal(t, []string{"o-on-time"}, keysOf(pub), "the stragglers wait for their buckets' sweeps")

	pollAt(t, ctx, r, clk, t0.Add(5*time.Second)) // bucket t0+2s closes: its sweep
	assert.Equal(t, []string{"o-on-time", "o-behind"}, keysOf(pub))
	pollAt(t, ctx, r, clk, t0.Add(6*time.Second)) // bucket t0+3s closes
	for i := 7; i < 10; i++ {
		pollAt(t, ctx, r, clk, t0.Add(time.Duration(i)*time.Second))
	}
	assert.Equal(t, []string{"o-on-time", "o-behind", "o-no-arrival"}, keysOf(pub), "each once")
}

// deleteArrival deletes the arrival of order key, as if it never landed.
func deleteArrival(t *testing.T, ctx context.Context, e *env, key string) {
	t.Helper()
	iter := e.session.Query("SELECT bucket, shard, staged_at, fence FROM "+e.ks+"."+DefaultArrivalsTable+
		" WHERE namespace = 'orders' AND key = ? ALLOW FILTERING", key).WithContext(ctx).Iter()
	var b int64
	var s int
	var at time.Time
	var fence int64
	n := 0
	for iter.Scan(&b, &s, &at, &fence) {
		require.NoError(t, e.session.Query("DELETE FROM "+e.ks+"."+DefaultArrivalsTable+
			" WHERE bucket = ? AND shard = ? AND staged_at = ? AND namespace = 'orders' AND key = ? AND fence = ?",
			b, s, at, key, fence).WithContext(ctx).Consistency(gocql.Quorum).Exec())
		n++
	}
	require.NoError(t, iter.Close())
	require.Equal(t, 1, n, "the order's one arrival")
}

// TestTakeoverMidBucket: a relay that takes a shard over while a bucket is open reads the
// bucket whole once, then its arrivals: it publishes what the relay before it left (staged
// before and after the cursor it starts from) and what is staged after, and nothing that
// relay published. Every event is published once.
func TestTakeoverMidBucket(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clk := testnode.NewClock(t0)
	e := clockedEnv(t, clk)
	ctx := ctxT(t)
	lag := WithArrivalLag(100 * time.Millisecond)
	first, next := &recorder{}, &recorder{}
	r1 := e.relay(t, first, fakeClock(clk.Now), lag)
	pollAt(t, ctx, r1, clk, t0.Add(100*time.Millisecond))

	e.stageAt(t, ctx, "o-a1", t0.Add(200*time.Millisecond))
	e.stageAt(t, ctx, "o-a2", t0.Add(200*time.Millisecond))
	pollAt(t, ctx, r1, clk, t0.Add(500*time.Millisecond))
	require.ElementsMatch(t, []string{"o-a1", "o-a2"}, keysOf(first))
	e.stageAt(t, ctx, "o-b1", t0.Add(450*time.Millisecond)) // behind the next relay's cursor (t0+0.5s)
	e.stageAt(t, ctx, "o-b2", t0.Add(550*time.Millisecond)) // after it: the whole read and the arrivals both find it
	r1.Release(ctx)

	r2 := e.relay(t, next, fakeClock(clk.Now), lag)
	pollAt(t, ctx, r2, clk, t0.Add(600*time.Millisecond))
	// Each is in a shard of its own, and a pass works its shards at once: no order between them.
	assert.ElementsMatch(t, []string{"o-b1", "o-b2"}, keysOf(next), "what the first relay left, from the bucket read whole")
	e.stageAt(t, ctx, "o-c1", t0.Add(700*time.Millisecond))
	st := pollAt(t, ctx, r2, clk, t0.Add(900*time.Millisecond))
	assert.Equal(t, 2, st.RowsRead, "the arrivals of o-b2 and o-c1")
	assert.ElementsMatch(t, []string{"o-b1", "o-b2", "o-c1"}, keysOf(next))
	for i := 2; i < 6; i++ { // the bucket closes at t0+3s: its sweep finds nothing left
		pollAt(t, ctx, r2, clk, t0.Add(time.Duration(i)*time.Second))
	}
	assert.ElementsMatch(t, []string{"o-a1", "o-a2"}, keysOf(first))
	assert.ElementsMatch(t, []string{"o-b1", "o-b2", "o-c1"}, keysOf(next), "each once, and none the first relay published")
}

// TestArrivalLagWithinHorizon: the lag may not exceed half the horizon, past which a stager's
// write fails anyway (ErrIntentLate).
func TestArrivalLagWithinHorizon(t *testing.T) {
	_, err := NewRelay(&gocql.Session{}, &recorder{}, WithHorizon(2*time.Second), WithArrivalLag(1500*time.Millisecond))
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "WithArrivalLag(1.5s)")
	_, err = NewRelay(&gocql.Session{}, &recorder{}, WithHorizon(2*time.Second), WithArrivalLag(time.Second))
	assert.NoError(t, err)
}
