package events

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// rollupState is a counter's rollup row: the total of every window before watermark (and of
// every first-layout bucket ending at or before it), and the first day of its windows.
type rollupState struct {
	watermark time.Time
	total     int64
	since     time.Time
	exists    bool // the row exists
	marked    bool // it has a watermark: a rollup ran
}

// readConcurrency bounds the reads one total or rollup has in flight: each part of each
// unfolded window is one read, run in parallel so a total costs about one read's latency.
const readConcurrency = 8

// Total returns the counter's total: its rollup plus every window from the rollup's own
// watermark to now, counting every event whose Record returned before Total was called.
// Reading the windows from the watermark of the same row that gave the total makes a read
// exact while a rollup races it: windows folded after the row was read are still summed here
// (folding never deletes events) and none is counted twice.
//
// Concurrent calls for one counter share reads: a call joins the next read of its counter,
// which starts after the one in flight (if any) returns, so a popular counter read by many
// requests at once costs at most one read in flight and one waiting, and every call still gets
// a read that began after it was made. A call that stops waiting (ctx) leaves the read to the
// others.
//
// A counter without events has total 0. The cost of a read, whatever the counter's history, is
// three rounds: the rollup row read beside the index slice from the last watermark this Log
// saw (see tail), then the unfolded windows (see sumEach: one read per part summed by the
// node, in parallel, up to 8 at a time, for the parts this Log has not summed since they last
// changed, and one read of the marks of the others), then the index of the windows still
// written to listed again, so a window whose writers changed their parts meanwhile is summed
// by event id (see partsChanged). With rollups running, the node sums about the events of the
// window filling now, and none of them is sent to the client; a part whose marks changed
// after its window ended costs one more round.
//
// A read that summed more than two closed windows (a counter no rollup reached for a while)
// folds them, once its callers have their total, with one conditional write on the watermark
// it read, as Rollup would: the next total, in any process, reads that fold and sums only the
// windows closed since.
//
// Windows are judged by the cluster's clock, as Record and Rollup judge them: while the Log's
// offset from it is not known within a quarter of the settle time, Total reads nothing and
// fails with ErrClockOffset.
func (l *Log) Total(ctx context.Context, counter string) (int64, error) {
	if err := l.checkCall(ctx); err != nil {
		return 0, err
	}
	if err := ValidateCounter(counter); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err // no read for a call that cannot wait for it
	}
	// Which windows a read covers, which sums are settled and which a fold may take are judged
	// by the cluster's time: a Log 9 minutes ahead folded windows still written to.
	if err := l.checkClock(ctx); err != nil {
		return 0, err
	}
	f := l.joinTotal(counter)
	select {
	case <-f.done:
		if f.err != nil {
			return 0, f.err
		}
		l.stats.totals.Add(1)
		return f.total, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// readTotal reads the counter's total once (see Total), and returns the fold of the closed
// windows it summed when there were more than maxClosedInTotal of them (nil otherwise).
func (l *Log) readTotal(ctx context.Context, counter string) (int64, *pendingFold, error) {
	now := l.cfg.Now()
	end := l.readEnd(now)
	st, legacy, windows, err := l.tail(ctx, counter, end)
	if err != nil {
		return 0, nil, err
	}
	sum, each, err := l.sumTail(ctx, counter, legacy, windows, now, end)
	if err != nil {
		return 0, nil, err
	}
	l.stats.reads.Add(1)
	total, err := addChecked(st.total, sum)
	if err != nil {
		return 0, nil, fmt.Errorf("events: total of %q: %w", counter, err)
	}
	return total, l.foldOf(counter, st, legacy, windows, each, now), nil
}

// sumTail sums what tail listed at now, and sums again by event id each window whose parts
// values changed while it was being summed; it returns each window's sum too.
func (l *Log) sumTail(ctx context.Context, counter string, legacy []time.Time, windows []window, now, end time.Time) (int64, []int64, error) {
	sum, each, err := l.sumEach(ctx, counter, legacy, windows, now, true)
	if err != nil {
		return 0, nil, err
	}
	changed, err := l.partsChanged(ctx, counter, windows, now, end)
	if err != nil {
		return 0, nil, err
	}
	for i, parts := range changed {
		s, err := l.sumMixed(ctx, counter, windows[i].start, parts)
		if err != nil {
			return 0, nil, fmt.Errorf("events: sum window %v of %q: %w", windows[i].start, counter, err)
		}
		if sum, err = addChecked(sum, -each[i]); err == nil {
			sum, err = addChecked(sum, s)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("events: sum of %q: %w", counter, err)
		}
		each[i] = s
	}
	return sum, each, nil
}

// partsChanged lists again, after their sums, the windows that writers could still write when
// the total began (not settled at now), and returns those whose parts values changed meanwhile,
// by their index in windows. Parts values share partitions (part 2 of 4 and part 2 of 7 are
// one partition), so a window listed with one value but written meanwhile by a writer with
// another holds copies of one event in partitions the node summed as that one value: such a
// window is summed again by event id. An event row is never written before its index row, so
// any row those sums read has its parts value listed by now.
func (l *Log) partsChanged(ctx context.Context, counter string, windows []window, now, end time.Time) (map[int][]int, error) {
	first := -1
	for i, w := range windows {
		if !l.settled(counter, w.start, now) {
			first = i
			break
		}
	}
	if first < 0 {
		return nil, nil
	}
	again, err := l.listWindows(ctx, counter, windows[first].start, end)
	if err != nil {
		return nil, err
	}
	parts := make(map[int64][]int, len(again))
	for _, w := range again {
		parts[w.start.UnixMilli()] = w.parts
	}
	var changed map[int][]int
	for i := first; i < len(windows); i++ {
		if listed, ok := parts[windows[i].start.UnixMilli()]; ok && !slices.Equal(listed, windows[i].parts) {
			if changed == nil {
				changed = map[int][]int{}
			}
			changed[i] = listed
		}
	}
	return changed, nil
}

// readRollup reads the counter's rollup row, at the serial consistency when serial is set so
// a rollup worker sees every committed (and finishes every in-flight) watermark move.
func (l *Log) readRollup(ctx context.Context, counter string, serial bool) (rollupState, error) {
	q := l.session.Query(l.q.readRollup, counter).WithContext(ctx).Consistency(l.cfg.Consistency)
	if serial {
		q = q.Consistency(l.cfg.SerialRead())
		l.stats.serialReads.Add(1)
	}
	var st rollupState
	var wm, since *time.Time
	var total *int64
	var widths map[time.Time]int
	read := l.cfg.Now()
	iter := q.Iter()
	st.exists = iter.Scan(&wm, &total, &since, &widths)
	if err := iter.Close(); err != nil {
		return rollupState{}, fmt.Errorf("events: read rollup of %q: %w", counter, err)
	}
	// The widths of the same row: the horizon, and which windows settled, follow them.
	l.learnWidths(counter, widths, read, since != nil)
	if wm != nil {
		st.watermark, st.marked = wm.UTC(), true
	}
	if total != nil {
		st.total = *total
	}
	if since != nil {
		st.since = since.UTC()
	}
	return st, nil
}

// listTail lists, at once, the first layout's buckets and the windows that st does not hold,
// before end.
func (l *Log) listTail(ctx context.Context, counter string, st rollupState, end time.Time) ([]time.Time, []window, error) {
	from := st.since
	if st.marked {
		from = st.watermark
	}
	var legacy []time.Time
	var windows []window
	err := parallel.ForEach(ctx, 2, 2, func(ctx context.Context, i int) error {
		var err error
		if i == 0 {
			legacy, err = l.listLegacy(ctx, counter, l.legacyAfter(st), end)
		} else {
			windows, err = l.listWindows(ctx, counter, from, end)
		}
		return err
	})
	return legacy, windows, err
}

// legacyAfter returns the start after which the first layout's buckets are not in st: those
// ending after its watermark (every one, the zero time, when no rollup ran).
func (l *Log) legacyAfter(st rollupState) time.Time {
	if !st.marked {
		return time.Time{}
	}
	return st.watermark.Add(-l.cfg.legacyWidth)
}

// listLegacy lists the first layout's buckets that start after after and before end.
func (l *Log) listLegacy(ctx context.Context, counter string, after, end time.Time) ([]time.Time, error) {
	iter := l.session.Query(l.q.listLegacy, counter, after, end).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	var out []time.Time
	var b time.Time
	for iter.Scan(&b) {
		out = append(out, b)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("events: list buckets of %q: %w", counter, err)
	}
	return out, nil
}

// window is one indexed window and the parts values its writers recorded.
type window struct {
	start time.Time
	parts []int
}

// listWindows lists the indexed windows in [from, end), slicing the index's day partitions;
// none when from is zero (the counter has no window).
func (l *Log) listWindows(ctx context.Context, counter string, from, end time.Time) ([]window, error) {
	if from.IsZero() {
		return nil, nil
	}
	var out []window
	for day := dayOf(from); day.Before(end); day = day.Add(24 * time.Hour) {
		iter := l.session.Query(l.q.listWindows, counter, day, from, end).WithContext(ctx).
			Consistency(l.cfg.Consistency).Iter()
		var start time.Time
		var parts int
		for iter.Scan(&start, &parts) {
			if n := len(out); n > 0 && out[n-1].start.Equal(start) {
				out[n-1].parts = append(out[n-1].parts, parts)
				continue
			}
			out = append(out, window{start: start, parts: []int{parts}})
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("events: list windows of %q on %v: %w", counter, day, err)
		}
	}
	return out, nil
}
