package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestWriterBehindRollupCountsEveryEvent: a writer whose clock runs 10 s behind the rollup's
// stamps its events with its own time and records them while rollups run. It judges windows by
// the cluster's clock, so an event whose window the cluster has closed takes the late path, and
// every event is counted once. Judging by its own clock (WithoutClockCheck) it wrote on time
// into windows the rollup had already folded: in one run 8 of the 40 events were counted.
func TestWriterBehindRollupCountsEveryEvent(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	behind := func() time.Time { return time.Now().Add(-10 * time.Second) }
	writer, err := events.NewLog(session, events.WithKeyspace(ks), events.WithClock(behind))
	require.NoError(t, err)
	roller, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)
	const n, writers = 40, 8
	done := make(chan struct{})
	rolled := make(chan error, 1)
	go func() { // rollups every 50 ms while the writers write
		defer close(rolled)
		for {
			if _, err := roller.Rollup(ctx, "c"); err != nil {
				rolled <- err
				return
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				errs <- writer.Record(ctx, events.Event{Counter: "c", ID: fmt.Sprint("e", i), Delta: 1, Time: behind()})
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(done)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, <-rolled)
	total, err := roller.Total(ctx, "c")
	require.NoError(t, err)
	assert.EqualValues(t, n, total, "every event counted once")
	c := writer.Stats().Clock
	assert.True(t, c.Measured)
	assert.InDelta(t, float64(10*time.Second), float64(c.Offset), float64(c.Bound+20*time.Millisecond))
	assert.Positive(t, writer.Stats().LateEvents, "the events of windows the cluster had closed took the late path")
}

// TestLogRefusedWithoutOffset: a Log that cannot measure its offset refuses Record,
// RecordBatch and Rollup with ErrClockOffset, before anything is written, and counts them.
func TestLogRefusedWithoutOffset(t *testing.T) {
	t.Parallel()
	closed := testnode.Connect(t, testnode.Cluster(t))
	closed.Close()
	l, err := events.NewLog(closed)
	require.NoError(t, err)
	ctx := context.Background()
	e := events.Event{Counter: "c", ID: "e", Delta: 1, Time: time.Now()}
	require.ErrorIs(t, l.Record(ctx, e), events.ErrClockOffset)
	require.ErrorIs(t, l.RecordBatch(ctx, []events.Event{e}), events.ErrClockOffset)
	_, err = l.Rollup(ctx, "c")
	var oe *clock.OffsetError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, events.DefaultSettleTime/4, oe.Limit)
	st := l.Stats()
	assert.Equal(t, int64(3), st.Clock.Refusals)
	assert.Equal(t, int64(1), st.RollupFailures)
	assert.Zero(t, st.Writes)
}

// TestFutureByUnmeasuredClockIsMeasuredFirst: a Log whose clock is 3 minutes behind the
// cluster's records an event stamped by the cluster's time (by another host) at its first call:
// ahead of its own clock by more than WithMaxClockSkew, the event is checked again once the
// offset is measured, not refused (nor, as the measurement came only after a check that
// passed, every later event with it).
func TestFutureByUnmeasuredClockIsMeasuredFirst(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	l, err := events.NewLog(session, events.WithKeyspace(ks), events.WithClock(func() time.Time { return time.Now().Add(-3 * time.Minute) }))
	require.NoError(t, err)
	require.NoError(t, l.Record(ctx, events.Event{Counter: "c", ID: "stamped-by-the-cluster", Delta: 1, Time: time.Now()}))
	require.NoError(t, l.RecordBatch(ctx, []events.Event{{Counter: "c", ID: "b", Delta: 2, Time: time.Now()}}))
	total, err := l.Total(ctx, "c")
	require.NoError(t, err)
	assert.EqualValues(t, 3, total)
	future := events.Event{Counter: "c", ID: "future", Delta: 1, Time: time.Now().Add(2 * time.Minute)}
	require.ErrorIs(t, l.Record(ctx, future), events.ErrFutureEvent, "ahead of the cluster's clock by more than the skew")
}

// TestLogAheadFoldsNothingOpen: a process whose clock is 9 minutes ahead of the cluster's reads
// totals of a counter that a correct process records (as the history checker's client p0 did,
// its clock moved 9 minutes ahead). Judged by its own clock, every window of the counter had
// closed, so its first Total folded them and moved the watermark 9 minutes ahead: the events
// recorded on time after it, in windows behind the watermark, were never counted (4 of 6). It
// judges windows by the cluster's clock, so it folds nothing still open, and its Rollup neither.
func TestLogAheadFoldsNothingOpen(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	ahead, err := events.NewLog(session, events.WithKeyspace(ks),
		events.WithClock(func() time.Time { return time.Now().Add(9 * time.Minute) }))
	require.NoError(t, err)
	writer, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)
	now := time.Now()
	for i, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second} {
		require.NoError(t, writer.Record(ctx, events.Event{Counter: "c", ID: fmt.Sprint("e", i), Delta: 1, Time: now.Add(at)}))
	}
	total, err := ahead.Total(ctx, "c")
	require.NoError(t, err)
	assert.EqualValues(t, 4, total)
	_, err = ahead.Rollup(ctx, "c")
	require.NoError(t, err)
	for i := range 2 { // on time, by the cluster's clock
		require.NoError(t, writer.Record(ctx, events.Event{Counter: "c", ID: fmt.Sprint("late", i), Delta: 1, Time: time.Now()}))
	}
	for _, l := range []*events.Log{writer, ahead} {
		total, err = l.Total(ctx, "c")
		require.NoError(t, err)
		assert.EqualValues(t, 6, total, "every event counted once")
	}
	c := ahead.Clock()
	assert.True(t, c.Measured)
	assert.InDelta(t, float64(-9*time.Minute), float64(c.Offset), float64(c.Bound+20*time.Millisecond))
	assert.Zero(t, writer.Stats().LateEvents, "the writer's events were on time")
}
