package events

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestCounterStartedElsewhereCostsARead starts a counter with one Log and records it with
// another: the second finds the start in the row it reads for the widths, and sends no LWT.
func TestCounterStartedElsewhereCostsARead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	first, second := newLog(), newLog()
	require.NoError(t, first.Record(ctx, Event{Counter: "c", ID: "a", Delta: 1, Time: t0}))
	require.EqualValues(t, 1, first.Stats().Starts, "the first Log starts the counter")
	require.NoError(t, second.Record(ctx, Event{Counter: "c", ID: "b", Delta: 1, Time: t0}))
	st := second.Stats()
	require.Zero(t, st.Starts, "the second finds it started")
	require.EqualValues(t, 1, st.WidthReads, "with the one read that gives it the widths too")
	got, err := second.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 2, got)
}
