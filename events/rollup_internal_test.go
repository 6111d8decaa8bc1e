package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestRollupInterruptedBetweenItsSteps stops a roller after it read the row and summed the
// closed windows, before its watermark move (a crash, a lost connection): the row is unchanged,
// so another roller folds the same windows once, and the first roller's late move, made from
// what it read before, is refused by its condition.
func TestRollupInterruptedBetweenItsSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	crashed, other := newLog(), newLog()
	for i := range 30 {
		require.NoError(t, other.Record(ctx, Event{Counter: "c", ID: fmt.Sprint(i), Delta: 1, Time: t0.Add(time.Duration(i%3) * time.Second)}))
	}
	clock.Advance(10 * time.Second)

	// The crashed roller's first steps.
	st, err := crashed.readRollup(ctx, "c", true)
	require.NoError(t, err)
	h := crashed.horizon("c", clock.Now())
	windows, err := crashed.listWindows(ctx, "c", st.since, h)
	require.NoError(t, err)
	sum, err := crashed.sum(ctx, "c", nil, windows, clock.Now())
	require.NoError(t, err)
	require.EqualValues(t, 30, sum)
	// ... it stops here. Its events keep coming: one more, then the other roller folds.
	require.NoError(t, other.Record(ctx, Event{Counter: "c", ID: "late", Delta: 1, Time: clock.Now()}))
	// A read that makes no fold (Total would fold the three closed windows it sums), so that
	// the rollup below is the one that folds them.
	total, _, err := other.readTotal(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 31, total, "a half-done rollup changes nothing")
	clock.Advance(10 * time.Second)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 31, res.Total)
	require.Equal(t, 4, res.Folded)

	// The crashed roller comes back and finishes its move from the stale state.
	applied, err := crashed.moveWatermark(ctx, "c", st, RollupResult{Watermark: h, Total: st.total + sum})
	require.NoError(t, err)
	require.False(t, applied, "the move is conditional on the row it read")
	for _, l := range []*Log{crashed, other} {
		total, err := l.Total(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 31, total)
		res, err := l.Rollup(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 31, res.Total)
		require.Zero(t, res.Folded)
	}
}
