package events

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// recordEachSecond records one event a second into counter, for n seconds from from, moving
// the clock with the events (a cold counter: one event per window).
func recordEachSecond(t *testing.T, clock *testnode.Clock, l *Log, counter string, from time.Time, n int) {
	t.Helper()
	for i := range n {
		clock.Set(from.Add(time.Duration(i) * time.Second))
		require.NoError(t, l.Record(context.Background(), Event{Counter: counter, ID: fmt.Sprint(counter, "-", i), Delta: 1, Time: clock.Now()}))
	}
}

// summedBy returns the partitions a total of counter by l summed, and the total.
func summedBy(t *testing.T, l *Log, counter string) (int64, int64) {
	t.Helper()
	before := l.Stats().TotalSummed
	total, err := l.Total(context.Background(), counter)
	require.NoError(t, err)
	return l.Stats().TotalSummed - before, total
}

// foldsOf waits until l's totals made want folds (a total folds after it answered).
func foldsOf(t *testing.T, l *Log, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return l.Stats().TotalFolds >= want }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, want, l.Stats().TotalFolds)
}

// TestTotalReadsARecentFold counts what a total of a cold counter sums: one event a second
// for 40 s and no rollup (as a counter waits for a rollup pass over 10,000 counters, four at a
// time) leaves 40 windows of 4 parts each, and a total sums all 160 partitions, 120 of them
// empty. A total that sums more than a few closed windows folds them (one conditional write on
// the watermark it read), so the next total, in any process, reads that fold and sums only
// the windows still open: before, a second process summed the 160 partitions again.
func TestTotalReadsARecentFold(t *testing.T) {
	t.Parallel()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	writer, reader := newLog(), newLog()
	recordEachSecond(t, clock, writer, "cold", t0, 40)

	summed, total := summedBy(t, writer, "cold")
	require.EqualValues(t, 40, total)
	require.EqualValues(t, 40*DefaultParts, summed, "every part of every unfolded window")
	foldsOf(t, writer, 1)

	summed, total = summedBy(t, reader, "cold")
	require.EqualValues(t, 40, total)
	open := (DefaultWindow + DefaultGracePeriod + DefaultSettleTime) / DefaultWindow
	require.LessOrEqual(t, summed, int64(open)*DefaultParts, "the first total folded what it summed")
	st, err := reader.readRollup(context.Background(), "cold", true)
	require.NoError(t, err)
	require.Equal(t, reader.horizon("cold", clock.Now()), st.watermark)
	require.EqualValues(t, 40-open, st.total)
}

// TestRunRollupsFoldsOnlyWhatClosed runs RunRollups' passes every 500 ms over 20 counters
// written once: a pass folds a counter only once one of its windows closed since its last
// fold, so each counter costs one Rollup, not one per pass until its window closed (180 before).
func TestRunRollupsFoldsOnlyWhatClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	l := newLog()
	const counters = 20
	for i := range counters {
		require.NoError(t, l.Record(ctx, Event{Counter: fmt.Sprint("c", i), ID: "e", Delta: 1, Time: t0}))
	}
	for step := range 10 {
		clock.Set(t0.Add(time.Duration(step) * 500 * time.Millisecond))
		require.NoError(t, l.rollPass(ctx, l.dueCounters(ctx), nil, l.folded))
	}
	require.EqualValues(t, counters, l.Stats().Rollups, "one fold per counter, once its window closed")
	require.Empty(t, l.dueCounters(ctx))
	for i := range counters {
		st, err := l.readRollup(ctx, fmt.Sprint("c", i), true)
		require.NoError(t, err)
		require.EqualValues(t, 1, st.total)
		total, err := l.Total(ctx, fmt.Sprint("c", i))
		require.NoError(t, err)
		require.EqualValues(t, 1, total)
	}
}

// TestTotalFoldInterrupted stops a total's fold before its conditional write (a crash, a lost
// connection) while other writers and a rollup go on: the row is unchanged until the rollup
// folds, the stale fold is then refused by its condition, and every total stays exact. A
// rollup interrupted between its sums and its move loses the same way to a total's fold.
func TestTotalFoldInterrupted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	crashed, other := newLog(), newLog()
	recordEachSecond(t, clock, other, "c", t0, 10)

	total, fold, err := crashed.readTotal(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 10, total)
	require.NotNil(t, fold, "ten windows, six of them closed")
	require.Equal(t, 6, fold.res.Folded)
	// ... it stops here. Events keep coming, and a rollup folds.
	clock.Advance(2 * time.Second)
	require.NoError(t, other.Record(ctx, Event{Counter: "c", ID: "more", Delta: 5, Time: clock.Now()}))
	readExact(t, "c", 15, crashed, other)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, 8, res.Folded)
	crashed.applyFold(ctx, "c", fold)
	require.Zero(t, crashed.Stats().TotalFolds, "the stale fold is refused")
	readExact(t, "c", 15, crashed, other)

	// A rollup that stops after its sums, and a total that folds meanwhile.
	recordEachSecond(t, clock, other, "d", t0.Add(20*time.Second), 10)
	st, err := crashed.readRollup(ctx, "d", true)
	require.NoError(t, err)
	h := crashed.horizon("d", clock.Now())
	windows, err := crashed.listWindows(ctx, "d", st.since, h)
	require.NoError(t, err)
	sum, err := crashed.sum(ctx, "d", nil, windows, clock.Now())
	require.NoError(t, err)
	total, err = other.Total(ctx, "d")
	require.NoError(t, err)
	require.EqualValues(t, 10, total)
	foldsOf(t, other, 1)
	applied, err := crashed.moveWatermark(ctx, "d", st, RollupResult{Watermark: h, Total: st.total + sum})
	require.NoError(t, err)
	require.False(t, applied, "the rollup's move is conditional on the row it read")
	readExact(t, "d", 10, crashed, other)
	clock.Advance(10 * time.Second)
	res, err = crashed.Rollup(ctx, "d")
	require.NoError(t, err)
	require.EqualValues(t, 10, res.Total)

	// A rollup that stops after its sums while the counter's windows widen from 1 s to 3 s:
	// totals and another rollup fold across the change meanwhile, and its move is refused.
	recordEvery := func(from time.Time, n int) {
		for i := range n {
			clock.Set(from.Add(time.Duration(i) * time.Second))
			require.NoError(t, other.Record(ctx, Event{Counter: "e", ID: fmt.Sprint(from, i), Delta: 1, Time: clock.Now()}))
		}
	}
	recordEvery(clock.Now(), 3)
	since := switchWidthOf(t, other, "e", 3*time.Second)
	recordEvery(since.Add(-4*time.Second), 10)
	st, err = crashed.readRollup(ctx, "e", true)
	require.NoError(t, err)
	h = crashed.horizon("e", clock.Now())
	require.True(t, h.After(since), "the fold reaches past the change")
	windows, err = crashed.listWindows(ctx, "e", st.since, h)
	require.NoError(t, err)
	sum, err = crashed.sum(ctx, "e", nil, windows, clock.Now())
	require.NoError(t, err)
	readExact(t, "e", 13, crashed, other)
	clock.Advance(4 * time.Second)
	recordEvery(clock.Now(), 2)
	res, err = other.Rollup(ctx, "e")
	require.NoError(t, err)
	require.Positive(t, res.Folded)
	applied, err = crashed.moveWatermark(ctx, "e", st, RollupResult{Watermark: h, Total: st.total + sum})
	require.NoError(t, err)
	require.False(t, applied, "the rollup's move is conditional on the row it read")
	readExact(t, "e", 15, crashed, other)
	clock.Advance(10 * time.Second)
	for _, l := range []*Log{crashed, other} {
		for counter, want := range map[string]int64{"c": 15, "d": 10, "e": 15} {
			total, err := l.Total(ctx, counter)
			require.NoError(t, err)
			require.Equal(t, want, total)
		}
	}
}

// readExact requires each Log's read of counter's total to be want; it makes no fold.
func readExact(t *testing.T, counter string, want int64, logs ...*Log) {
	t.Helper()
	for _, l := range logs {
		total, _, err := l.readTotal(context.Background(), counter)
		require.NoError(t, err)
		require.Equal(t, want, total)
	}
}

// TestFoldsRaceWithTotals runs three Logs on two counters: writers record, totals from every
// Log check each total against the events acknowledged before it and sent after it, and
// rollups of two Logs run now and then (so totals find closed windows and fold them), all at
// once with the clock moving between rounds. Totals' folds, racing each other and the rollups,
// fold each window once: every total is exact, and so is each counter's at the end.
func TestFoldsRaceWithTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	logs := []*Log{newLog(), newLog(), newLog()}
	counters := []string{"x", "y"}
	var sent, acked [2]atomic.Int64
	var wg sync.WaitGroup
	// The counters' windows change width halfway: x's narrow to 250 ms, y's widen to 3 s.
	for k, c := range counters {
		require.NoError(t, logs[k].Record(ctx, Event{Counter: c, ID: "first", Delta: 1, Time: clock.Now()}))
		sent[k].Add(1)
		acked[k].Add(1)
	}
	since := switchWidthOf(t, logs[0], "x", 250*time.Millisecond)
	require.Equal(t, since, switchWidthOf(t, logs[1], "y", 3*time.Second))
	clock.Set(since.Add(-6 * time.Second))
	for round := range 40 {
		clock.Advance(300 * time.Millisecond)
		for w := range 4 {
			wg.Go(func() {
				k := w % 2
				for i := range 3 {
					sent[k].Add(1)
					e := Event{Counter: counters[k], ID: fmt.Sprint(round, "-", w, "-", i), Delta: 1, Time: clock.Now()}
					if err := logs[(w+i)%3].Record(ctx, e); err != nil {
						t.Errorf("record %s: %v", e.ID, err)
						return
					}
					acked[k].Add(1)
				}
			})
		}
		for r := range 6 {
			wg.Go(func() {
				k := r % 2
				before := acked[k].Load()
				total, err := logs[r%3].Total(ctx, counters[k])
				if err != nil || total < before || total > sent[k].Load() {
					t.Errorf("total of %s: %d, %v: want %d..%d", counters[k], total, err, before, sent[k].Load())
				}
			})
		}
		if round%15 == 0 {
			for _, l := range logs[:2] {
				wg.Go(func() {
					if err := l.rollPass(ctx, counters, nil, nil); err != nil {
						t.Errorf("rollup: %v", err)
					}
				})
			}
		}
		wg.Wait()
	}
	folds := func() int64 {
		var n int64
		for _, l := range logs {
			n += l.Stats().TotalFolds
		}
		return n
	}
	require.Eventually(t, func() bool { return folds() > 0 }, 10*time.Second, 5*time.Millisecond,
		"totals found closed windows and folded them")
	t.Logf("%d folds by totals", folds())
	clock.Advance(10 * time.Second)
	for k, c := range counters {
		res, err := logs[0].Rollup(ctx, c)
		require.NoError(t, err)
		require.Equal(t, acked[k].Load(), res.Total)
		for _, l := range logs {
			total, err := l.Total(ctx, c)
			require.NoError(t, err)
			require.Equal(t, acked[k].Load(), total)
		}
	}
}

// TestRollupFoldsInOnePaxosRound folds a counter whose row no other worker moves: the row is
// read with a plain read and moved with one conditional write, so the fold costs one Paxos
// round (it read the row at the serial consistency first, a second round). A stale move from
// the same state is refused, and the totals are exact.
func TestRollupFoldsInOnePaxosRound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	l, other := newLog(), newLog()
	recordEachSecond(t, clock, l, "c", t0, 10)
	clock.Advance(10 * time.Second)
	st, err := other.readRollup(ctx, "c", false)
	require.NoError(t, err)
	res, err := l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, 10, res.Folded)
	require.EqualValues(t, 10, res.Total)
	require.Zero(t, l.stats.serialReads.Load(), "no serial read")

	applied, err := other.moveWatermark(ctx, "c", st, RollupResult{Watermark: res.Watermark, Total: 1000})
	require.NoError(t, err)
	require.False(t, applied, "a move from the row as it was before the fold")
	res, err = other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Zero(t, res.Folded)
	for _, lg := range []*Log{l, other} {
		total, err := lg.Total(ctx, "c")
		require.NoError(t, err)
		require.EqualValues(t, 10, total)
	}
}
