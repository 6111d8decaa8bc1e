package events

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestTotalWhilePartsChange lists a window written with 4 parts, then lets writers with 7
// parts record the same events in it (retries during a rolling change of WithParts) before the
// sums run, as a total racing them would see it: the partitions summed as 4 parts then hold
// copies of those events, and the total must still count each once.
func TestTotalWhilePartsChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	four, seven := newLog(WithParts(4)), newLog(WithParts(7))
	const n = 40
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = Event{Counter: "c", ID: fmt.Sprint("e", i), Delta: 1, Time: t0}
		require.NoError(t, four.Record(ctx, evs[i]))
	}

	now := clock.Now()
	end := four.readEnd(now)
	st, legacy, windows, err := four.tail(ctx, "c", end)
	require.NoError(t, err)
	require.Len(t, windows, 1)
	require.Equal(t, []int{4}, windows[0].parts, "listed before the other writers came")
	for _, e := range evs {
		require.NoError(t, seven.Record(ctx, e), "a retry by a writer with 7 parts")
	}
	stale, err := four.sum(ctx, "c", legacy, windows, now)
	require.NoError(t, err)
	require.Greater(t, stale, int64(n), "the 4-part sums hold copies written with 7 parts")

	sum, _, err := four.sumTail(ctx, "c", legacy, windows, now, end)
	require.NoError(t, err)
	require.EqualValues(t, n, st.total+sum)
	for _, l := range []*Log{four, seven} {
		total, err := l.Total(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, n, total)
	}
}
