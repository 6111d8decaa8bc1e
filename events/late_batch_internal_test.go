package events

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// lateRun returns n events of counter c, the i-th at start + i*step with delta i+1, and the
// sum of their deltas: a total that counts one twice or misses one is off.
func lateRun(prefix string, n int, start time.Time, step time.Duration) ([]Event, int64) {
	evs := make([]Event, n)
	var sum int64
	for i := range evs {
		evs[i] = Event{Counter: "c", ID: fmt.Sprintf("%s-%04d", prefix, i), Delta: int64(i + 1), Time: start.Add(time.Duration(i) * step)}
		sum += int64(i + 1)
	}
	return evs, sum
}

// requireTotals checks the total every Log of ls reads.
func requireTotals(t *testing.T, want int64, ls ...*Log) {
	t.Helper()
	for _, l := range ls {
		got, err := l.Total(context.Background(), "c")
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// TestRecordBatchRetriesAcrossBatchBoundaries records 300 late events (250 in one second,
// more than one conditional batch holds) in two overlapping calls of two Logs, then all of
// them again after their windows closed and after a rollup: each counts once, and the late
// claims cost a conditional batch per hundred events of a second, not an LWT per event.
func TestRecordBatchRetriesAcrossBatchBoundaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	_, newLog := logsOn(t, clock)
	l, other := newLog(), newLog(WithParts(7))
	evs, sum := lateRun("b", 300, t0, 4*time.Millisecond)

	require.NoError(t, l.RecordBatch(ctx, evs[:150]))
	st := l.Stats()
	require.EqualValues(t, 150, st.LateEvents)
	require.EqualValues(t, 2, st.LateRounds, "150 events of one second: two batches of at most 100")
	require.NoError(t, other.RecordBatch(ctx, evs[100:]), "50 of them claimed already, across the first call's batch boundary")
	require.LessOrEqual(t, other.Stats().LateRounds, int64(5))
	requireTotals(t, sum, l, other)

	clock.Advance(time.Minute) // every claim's window closed, with its row
	require.NoError(t, l.RecordBatch(ctx, evs))
	requireTotals(t, sum, l, other)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sum, res.Total)
	require.NoError(t, other.RecordBatch(ctx, append(evs[200:], evs[:50]...)), "after the rollup folded them")
	requireTotals(t, sum, l, other)
	require.EqualValues(t, 2, l.Stats().LateRounds, "rows found in the claims' windows: no claim moved")
}

// TestRecordBatchConsumersRace lets 16 goroutines of two Logs record the same 200 late events
// at once, each in its own order and batch size: every event counts once.
func TestRecordBatchConsumersRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	_, newLog := logsOn(t, clock)
	logs := []*Log{newLog(), newLog(WithParts(3))}
	evs, sum := lateRun("r", 200, t0, 7*time.Millisecond)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			mine := append(append([]Event{}, evs[g*11:]...), evs[:g*11]...) // rotated
			size := 10 + g*13
			for start := 0; start < len(mine); start += size {
				errs <- logs[g%2].RecordBatch(ctx, mine[start:min(start+size, len(mine))])
			}
		})
	}
	go func() { wg.Wait(); close(errs) }()
	for err := range errs {
		require.NoError(t, err)
	}
	requireTotals(t, sum, logs...)
	clock.Advance(time.Minute)
	res, err := logs[1].Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sum, res.Total)
	requireTotals(t, sum, logs...)
}

// TestRecordBatchStoppedBetweenItsSteps stops a late batch after its claims (a crash), with
// half the rows of one set written: a retry while the claims' window is open writes the
// missing rows there; a retry after it closed finds the written half and moves the claims of
// the other half, once, even with many retries racing, and counts each event once in its
// stats. Every total is exact throughout.
func TestRecordBatchStoppedBetweenItsSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	session, newLog := logsOn(t, clock)
	crashed, other := newLog(), newLog()
	open, sumOpen := lateRun("open", 120, t0, 5*time.Millisecond)
	stale, sumStale := lateRun("stale", 120, t0.Add(2*time.Second), 5*time.Millisecond)

	// crash claims evs and writes the rows of the first written of them, then stops.
	crash := func(evs []Event, written int) []*lateItem {
		items := make([]*lateItem, len(evs))
		for i, e := range evs {
			items[i] = crashed.newItem(e, crashed.windowOf(e.Counter, e.Time), clock.Now())
		}
		crashed.runStep(ctx, items, stepCheck, crashed.checkOwn)
		crashed.runStep(ctx, items, stepClaim, crashed.claimGroup)
		for _, it := range items {
			require.NoError(t, it.err)
			require.Equal(t, stepWrite, it.step)
		}
		for _, it := range items[:written] {
			require.NoError(t, crashed.store(ctx, it.e, it.window))
		}
		return items
	}
	crash(open, 60)
	requireTotals(t, deltaSum(open[:60]), crashed, other)
	require.NoError(t, other.RecordBatch(ctx, open), "the retry writes the claimed window's missing rows")
	requireTotals(t, sumOpen, crashed, other)

	items := crash(stale, 60)
	first := items[0].target
	clock.Advance(time.Minute) // the claims' window closes with half the rows
	requireTotals(t, sumOpen+deltaSum(stale[:60]), crashed, other)
	// One Log retries first: the written half's claims it follows, the other half's it
	// verifies, then moves; each of the 120 late events counts once in its stats.
	first3 := newLog()
	require.NoError(t, first3.RecordBatch(ctx, stale))
	require.EqualValues(t, len(stale), first3.Stats().LateEvents, "a late event whose claim moved counts once")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() { errs <- []*Log{crashed, other}[g%2].RecordBatch(ctx, stale) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireTotals(t, sumOpen+sumStale, crashed, other)
	for i, e := range stale {
		var target time.Time
		require.NoError(t, session.Query(`SELECT target FROM counter_late_slices WHERE counter = ? AND second = ? AND event_id = ?`,
			"c", sliceOf(e), e.ID).Scan(&target))
		if i < 60 {
			require.True(t, target.Equal(first), "%s was written: its claim stays", e.ID)
		} else {
			require.True(t, target.After(first), "%s moved from %v to the open window, %v", e.ID, first, target)
		}
	}
	clock.Advance(time.Minute)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, sumOpen+sumStale, res.Total)
	require.NoError(t, crashed.RecordBatch(ctx, append(open, stale...)))
	requireTotals(t, sumOpen+sumStale, crashed, other)
}

// deltaSum sums the deltas of evs.
func deltaSum(evs []Event) int64 {
	var s int64
	for _, e := range evs {
		s += e.Delta
	}
	return s
}

// TestRecordBatchBesideRollups records batches of late and on-time events while another Log
// rolls the counter up in a loop and the clock moves: every total read after a call counts
// all it acknowledged and never more than was recorded, and the final rollup is exact.
func TestRecordBatchBesideRollups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	_, newLog := logsOn(t, clock)
	writer, roller := newLog(), newLog()

	stop := make(chan struct{})
	rolled := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				rolled <- nil
				return
			default:
			}
			if _, err := roller.Rollup(ctx, "c"); err != nil {
				rolled <- err
				return
			}
		}
	}()
	var want int64
	for round := range 12 {
		late, sum := lateRun(fmt.Sprintf("late%d", round), 100, t0.Add(time.Duration(round)*time.Second), 9*time.Millisecond)
		onTime, sumOn := lateRun(fmt.Sprintf("now%d", round), 20, clock.Now(), time.Millisecond)
		batch := append(late, onTime...)
		require.NoError(t, writer.RecordBatch(ctx, batch))
		want += sum + sumOn
		requireTotals(t, want, writer, roller)
		if round%3 == 0 {
			require.NoError(t, roller.RecordBatch(ctx, batch), "a retry beside the rollups")
			requireTotals(t, want, writer, roller)
		}
		clock.Advance(700 * time.Millisecond)
	}
	close(stop)
	require.NoError(t, <-rolled)
	clock.Advance(time.Minute)
	res, err := roller.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, want, res.Total)
	requireTotals(t, want, writer, roller)
	require.Less(t, writer.Stats().LateRounds, writer.Stats().LateEvents/10, "a round per group, not per event")
}
