package guard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestGuardBehindRunsNothingTwice: a consumer process whose clock is 5 minutes behind the
// cluster's processes messages of a scope it does not own (the LWT path), then a process with a
// correct clock owns the scope (a pre-check with a 3 minute horizon) and is delivered the same
// messages. Judged by its own clock, the first guard indexed each id in a window 5 minutes old,
// which the owner's warm-up, reading 4 minutes back, did not read: the owner's pre-check took
// every copy for new and ran its handler again on the fast path (10 of 10). It judges time by
// the cluster's clock, so the owner finds every id and runs none twice.
func TestGuardBehindRunsNothingTwice(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	behind := func() time.Time { return time.Now().Add(-5 * time.Minute) }
	a := guardOn(t, session, ks, guard.WithClock(behind))
	b := guardOn(t, session, ks)
	scope := guard.Scope{Group: "g", Topic: "clock", Partition: 1}
	var mu sync.Mutex
	runs := map[string]int{}
	h := func(_ context.Context, m guard.Message) error {
		mu.Lock()
		defer mu.Unlock()
		runs[m.ID]++
		return nil
	}
	const n = 10
	msgs := make([]guard.Message, n)
	for i := range msgs {
		msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprint("m", i), Payload: []byte("x"), Time: time.Now()}
		out, err := a.Process(ctx, msgs[i], h)
		require.NoError(t, err)
		require.Equal(t, guard.Processed, out)
	}
	pre, err := bloom.NewPreCheck("g/clock/1", bloom.WithExpectedItems(1000), bloom.WithRetention(3*time.Minute))
	require.NoError(t, err)
	require.NoError(t, b.Own(ctx, scope, 1, pre))
	t.Cleanup(func() { b.Disown(scope) })
	for _, m := range msgs {
		out, err := b.Process(ctx, m, h)
		require.NoError(t, err)
		assert.Equal(t, guard.Duplicate, out, m.ID)
	}
	twice := 0
	for _, r := range runs {
		if r > 1 {
			twice++
		}
	}
	assert.Zero(t, twice, "handlers run twice")
	assert.Len(t, runs, n)
	c := a.Clock()
	assert.True(t, c.Measured)
	assert.InDelta(t, float64(5*time.Minute), float64(c.Offset), float64(c.Bound+20*time.Millisecond))
}

// TestGuardRefusedWithoutOffset: a guard that cannot measure its offset refuses Process (outcome
// Failed), ProcessBatch, Own, ReleaseMessage and ScanStuck with ErrClockOffset, before any
// handler runs or anything is written, and counts them.
func TestGuardRefusedWithoutOffset(t *testing.T) {
	t.Parallel()
	closed := testnode.Connect(t, testnode.Cluster(t))
	closed.Close()
	g, err := guard.New(closed)
	require.NoError(t, err)
	ctx := context.Background()
	ran := 0
	h := func(context.Context, guard.Message) error { ran++; return nil }
	m := guard.Message{Scope: guard.Scope{Group: "g", Topic: "t", Partition: 0}, ID: "m", Time: time.Now()}
	out, err := g.Process(ctx, m, h)
	require.ErrorIs(t, err, guard.ErrClockOffset)
	assert.Equal(t, guard.Failed, out)
	_, err = g.ProcessBatch(ctx, []guard.Message{m}, h)
	require.ErrorIs(t, err, guard.ErrClockOffset)
	pre, perr := bloom.NewPreCheck("g/t/0")
	require.NoError(t, perr)
	err = g.Own(ctx, m.Scope, 1, pre)
	var oe *clock.OffsetError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, time.Minute/4, oe.Limit)
	_, err = g.ReleaseMessage(ctx, m.Scope, m.ID)
	require.ErrorIs(t, err, guard.ErrClockOffset, "a lease judged live or not by an unmeasured clock")
	_, err = g.ScanStuck(ctx, lwt.StuckOptions{}, func(lwt.StuckClaim) error { return nil })
	require.ErrorIs(t, err, guard.ErrClockOffset)
	assert.Zero(t, ran)
	assert.Equal(t, int64(5), g.Clock().Refusals)
}
