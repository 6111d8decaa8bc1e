package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestWindowSpansCutAtEachWidthsSince checks span: a time's window is its time truncated to the
// width in effect then, cut at the next entry's since, so the windows of two widths never
// overlap, and a window's own start gives back the same window.
func TestWindowSpansCutAtEachWidthsSince(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time { return t0.Add(mustDuration(t, s)) }
	ws := &widths{entries: widthsOf(map[time.Time]int{
		time.Unix(0, 0): 1000, at("10.5s"): 30000, at("1m1s"): 250,
	})}
	for _, c := range []struct{ t, start, end string }{
		{"3.2s", "3s", "4s"},
		{"10.2s", "10s", "10.5s"},  // the last 1 s window is cut at the switch
		{"10.5s", "10.5s", "30s"},  // the first 30 s window starts there
		{"45s", "30s", "1m0s"},     // then whole ones
		{"1m0.9s", "1m0s", "1m1s"}, // cut at the next switch
		{"1m1.3s", "1m1.25s", "1m1.5s"},
	} {
		start, end := ws.span(at(c.t), time.Second)
		require.Equal(t, at(c.start), start, c.t)
		require.Equal(t, at(c.end), end, c.t)
		again, againEnd := ws.span(start, time.Second)
		require.Equal(t, start, again, c.t)
		require.Equal(t, end, againEnd, c.t)
	}
	none := &widths{}
	start, end := none.span(at("7.7s"), 2*time.Second)
	require.Equal(t, at("6s"), start, "no entry: the base width")
	require.Equal(t, at("8s"), end)
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	require.NoError(t, err)
	return d
}

// switchWidthOf makes l add the entry w for counter, as its traffic would (countRows), and
// returns its since.
func switchWidthOf(t *testing.T, l *Log, counter string, w time.Duration) time.Time {
	t.Helper()
	before := l.Stats().WidthSwitches
	l.widths.mu.Lock()
	l.widths.wants[counter] = w
	l.widths.mu.Unlock()
	l.switchWidth(context.Background(), counter)
	require.Equal(t, before+1, l.Stats().WidthSwitches)
	got, since := l.widthsNow(counter).last(l.cfg.width)
	require.Equal(t, w, got)
	return since
}

// TestRetriesAcrossAWidthChange records events of one counter from two Logs (two processes)
// and retries each of them from the other, around a change of the counter's windows from 1 s
// to 3 s: before the change takes effect, with event times past it (the other Log had read the
// widths before the change was written, and reads them again before it uses them for those
// times), after it, and late (their windows closed: the late path looks for the row in the
// window of the width of the event's time). A third Log and the first read the total after
// every step (the second does not: a total reads the widths with the rollup row, and the test
// is of its writes' own reads), and every event is counted once and stored in exactly one row.
func TestRetriesAcrossAWidthChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	session, newLog := logsOn(t, clock)
	a, b, reader := newLog(), newLog(), newLog()
	var n int64
	recordBoth := func(at time.Time, first, second *Log) {
		t.Helper()
		e := Event{Counter: "r", ID: fmt.Sprint("e", n), Delta: 1, Time: at}
		require.NoError(t, first.Record(ctx, e))
		n++
		readExact(t, "r", n, reader)
		require.NoError(t, second.Record(ctx, e), "a retry from another process")
		readExact(t, "r", n, reader, a) // not b: its totals would read the widths for it
	}
	recordBoth(clock.Now(), b, a) // b reads the widths: 1 s from the start
	since := switchWidthOf(t, a, "r", 3*time.Second)
	require.Equal(t, 1, since.Compare(clock.Now().Add(a.cfg.skew+widthRefresh)), "ahead of what b's read vouches for")

	// Before the change: event times on both sides of it, from both Logs in both orders.
	clock.Set(since.Add(-20 * time.Second))
	for _, d := range []time.Duration{-5 * time.Second, -100 * time.Millisecond, 0, 1400 * time.Millisecond, 10 * time.Second} {
		recordBoth(since.Add(d), b, a)
		recordBoth(since.Add(d).Add(time.Millisecond), a, b)
	}
	// After it, then late: every window above has closed by the last step.
	clock.Set(since.Add(12 * time.Second))
	recordBoth(clock.Now(), a, b)
	clock.Set(since.Add(40 * time.Second))
	for _, d := range []time.Duration{-5 * time.Second, 0, 1400 * time.Millisecond, 10 * time.Second} {
		e := Event{Counter: "r", ID: fmt.Sprint("late", d), Delta: 1, Time: since.Add(d)}
		require.NoError(t, a.Record(ctx, e))
		n++
		require.NoError(t, b.Record(ctx, e), "a late retry")
		require.NoError(t, b.RecordBatch(ctx, []Event{e}))
		readExact(t, "r", n, reader, a)
	}

	_, end := a.span("r", since)
	require.Equal(t, since.Truncate(3*time.Second).Add(3*time.Second), end, "the first 3 s window ends on the 3 s grid")
	clock.Advance(time.Minute)
	res, err := reader.Rollup(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, n, res.Total)
	readExact(t, "r", n, reader, a, b)
	var rows int64
	require.NoError(t, session.Query("SELECT count(*) FROM "+a.cfg.Keyspace+".counter_window_events WHERE counter = 'r' ALLOW FILTERING").Scan(&rows))
	require.Equal(t, n, rows, "one row per event")
}

// TestTrafficPicksWidths: a counter a Log writes once a second gets the cold width after its
// first whole period of 5 s, and one it writes at 3,000 events/s the hot width (and not the
// cold one first, for the period it saw only the end of), each from a since
// widthSwitchAhead ahead of the clock; a counter in between keeps the window width.
func TestTrafficPicksWidths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	l := newLog()
	record := func(counter string, i int) {
		t.Helper()
		require.NoError(t, l.Record(ctx, Event{Counter: counter, ID: fmt.Sprint(counter, i), Delta: 1, Time: clock.Now()}))
	}
	for i := range 11 {
		clock.Set(t0.Add(time.Duration(i) * time.Second))
		record("cold", i)
		record("warm", i)
		l.countRows("warm", 100, clock.Now()) // 20 events/s: neither hot nor cold
	}
	require.EqualValues(t, 1, l.Stats().WidthSwitches, "the cold counter, once its first whole period ended")
	w, since := l.widthsNow("cold").last(l.cfg.width)
	require.Equal(t, DefaultColdWidth, w)
	require.True(t, since.After(t0.Add(l.widthSwitchAhead())), "ahead of the clock when it was added")
	w, _ = l.widthsNow("warm").last(l.cfg.width)
	require.Equal(t, DefaultWindow, w)

	// The hot counter's first write comes at the end of a period: that period, seen in part,
	// is not judged (it read as cold, and its windows flapped, in a run of the benchmark).
	clock.Set(clock.Now().Truncate(ratePeriod).Add(ratePeriod - time.Millisecond))
	record("hot", 0)
	clock.Advance(time.Millisecond)
	record("hot", 1)
	l.countRows("hot", 15_000, clock.Now())
	require.EqualValues(t, 1, l.Stats().WidthSwitches, "no judgement of a period seen in part")
	clock.Advance(ratePeriod)
	record("hot", 2)
	require.EqualValues(t, 2, l.Stats().WidthSwitches)
	w, _ = l.widthsNow("hot").last(l.cfg.width)
	require.Equal(t, DefaultHotWidth, w)
	// Another Log reads the same widths with the row.
	other := newLog()
	_, err := other.Total(ctx, "hot")
	require.NoError(t, err)
	w, _ = other.widthsNow("hot").last(other.cfg.width)
	require.Equal(t, DefaultHotWidth, w)
}

// TestSparseCounterTurnsCold writes a counter once every 11 s, so that no two of its rate
// periods in a row have writes: its second write judges the span since the first, and its
// windows widen to the cold width. Before, such a counter kept the window width for good.
func TestSparseCounterTurnsCold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	l := newLog()
	for i := range 2 {
		clock.Set(t0.Add(time.Duration(i) * 11 * time.Second))
		require.NoError(t, l.Record(ctx, Event{Counter: "sparse", ID: fmt.Sprint(i), Delta: 1, Time: clock.Now()}))
	}
	require.EqualValues(t, 1, l.Stats().WidthSwitches, "judged at its second write")
	w, _ := l.widthsNow("sparse").last(l.cfg.width)
	require.Equal(t, DefaultColdWidth, w)
}
