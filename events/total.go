package events

import (
	"context"
	"fmt"
	"sync/atomic"
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
// watermark to now. Reading the windows from the watermark of the same row that gave the
// total makes a read exact while a rollup races it: windows folded after the row was read are
// still summed here (folding never deletes events) and none is counted twice.
//
// A counter without events has total 0. The cost is one rollup read, one index slice and one
// read per part of each unfolded window (in parallel, up to 8 at a time), whatever the
// counter's history: with rollups running, about rate x Lag(interval) events are summed.
func (l *Log) Total(ctx context.Context, counter string) (int64, error) {
	if err := l.checkCall(ctx); err != nil {
		return 0, err
	}
	if err := ValidateCounter(counter); err != nil {
		return 0, err
	}
	st, err := l.readRollup(ctx, counter, false)
	if err != nil {
		return 0, err
	}
	sum, _, err := l.sumTail(ctx, counter, st, l.readEnd(l.cfg.now()))
	if err != nil {
		return 0, err
	}
	return st.total + sum, nil
}

// readRollup reads the counter's rollup row, at the serial consistency when serial is set so
// a rollup worker sees every committed (and finishes every in-flight) watermark move.
func (l *Log) readRollup(ctx context.Context, counter string, serial bool) (rollupState, error) {
	q := l.session.Query(l.q.readRollup, counter).WithContext(ctx).Consistency(l.cfg.consistency)
	if serial {
		q = q.Consistency(l.cfg.serialRead())
	}
	var st rollupState
	var wm, since *time.Time
	var total *int64
	iter := q.Iter()
	st.exists = iter.Scan(&wm, &total, &since)
	if err := iter.Close(); err != nil {
		return rollupState{}, fmt.Errorf("events: read rollup of %q: %w", counter, err)
	}
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

// sumTail sums what st does not hold, up to end (exclusive): the first layout's buckets that
// end after the watermark and the windows from the watermark on (from since when no rollup
// ran). It reports how many buckets and windows it read.
func (l *Log) sumTail(ctx context.Context, counter string, st rollupState, end time.Time) (int64, int, error) {
	legacy, windows, err := l.listTail(ctx, counter, st, end)
	if err != nil {
		return 0, 0, err
	}
	sum, err := l.sum(ctx, counter, legacy, windows)
	return sum, len(legacy) + len(windows), err
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
			legacy, err = l.listLegacy(ctx, counter, st, end)
		} else {
			windows, err = l.listWindows(ctx, counter, from, end)
		}
		return err
	})
	return legacy, windows, err
}

// listLegacy lists the first layout's buckets before end that the watermark does not cover:
// those ending after it (all of them when no rollup ran).
func (l *Log) listLegacy(ctx context.Context, counter string, st rollupState, end time.Time) ([]time.Time, error) {
	var after time.Time
	if st.marked {
		after = st.watermark.Add(-l.cfg.legacyWidth)
	}
	iter := l.session.Query(l.q.listLegacy, counter, after, end).WithContext(ctx).Consistency(l.cfg.consistency).Iter()
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
			Consistency(l.cfg.consistency).Iter()
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

// read is one query of a sum: a legacy bucket, one part of a window, or a whole window written
// with several parts values.
type read struct {
	legacy bool
	start  time.Time
	part   int
	mixed  []int // parts values of a mixed window, summed by event id
}

// sum reads every legacy bucket and every part of every window, in parallel.
func (l *Log) sum(ctx context.Context, counter string, legacy []time.Time, windows []window) (int64, error) {
	var reads []read
	for _, b := range legacy {
		reads = append(reads, read{legacy: true, start: b})
	}
	for _, w := range windows {
		if len(w.parts) > 1 {
			reads = append(reads, read{start: w.start, mixed: w.parts})
			continue
		}
		for p := range w.parts[0] {
			reads = append(reads, read{start: w.start, part: p})
		}
	}
	if len(reads) == 0 {
		return 0, nil
	}
	var total atomic.Int64
	err := parallel.ForEach(ctx, len(reads), readConcurrency, func(ctx context.Context, i int) error {
		s, err := l.sumRead(ctx, counter, reads[i])
		total.Add(s)
		return err
	})
	return total.Load(), err
}

func (l *Log) sumRead(ctx context.Context, counter string, r read) (int64, error) {
	var s int64
	var err error
	switch {
	case r.legacy:
		err = l.session.Query(l.q.sumLegacy, counter, r.start).WithContext(ctx).Consistency(l.cfg.consistency).Scan(&s)
	case r.mixed != nil:
		s, err = l.sumMixed(ctx, counter, r.start, r.mixed)
	default:
		err = l.session.Query(l.q.sumPart, counter, r.start, r.part).WithContext(ctx).Consistency(l.cfg.consistency).Scan(&s)
	}
	if err != nil {
		return 0, fmt.Errorf("events: sum window %v of %q: %w", r.start, counter, err)
	}
	return s, nil
}

// sumMixed sums a window whose writers used several parts values (parts changed while it was
// open): an event retried across the change may be in two parts, so each id counts once.
func (l *Log) sumMixed(ctx context.Context, counter string, start time.Time, parts []int) (int64, error) {
	most := 0
	for _, p := range parts {
		most = max(most, p)
	}
	seen := make(map[string]struct{})
	var total int64
	for p := range most {
		iter := l.session.Query(l.q.readPart, counter, start, p).WithContext(ctx).Consistency(l.cfg.consistency).Iter()
		var id string
		var delta int64
		for iter.Scan(&id, &delta) {
			if _, dup := seen[id]; !dup {
				seen[id] = struct{}{}
				total += delta
			}
		}
		if err := iter.Close(); err != nil {
			return 0, err
		}
	}
	return total, nil
}
