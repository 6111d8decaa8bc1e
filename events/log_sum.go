package events

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// read is one query of a sum: a first-layout bucket, one part of a window, or a window written
// with several parts values (summed here by event id).
type read struct {
	legacy bool
	start  time.Time
	part   int
	mixed  []int // parts values of a mixed window
	win    int   // the window's index in the list summed; -1 for a first-layout bucket
	final  bool  // the window settled before the read was sent: its sum never changes
}

// check asks whether the parts of a window whose sums a Log cached were written since.
type check struct {
	start time.Time
	parts []int
	win   int
}

// sum reads every legacy bucket and every part of every window, in parallel, each summed by
// the node, so no event row crosses the network; sums this Log cached are read again only if
// their partition was written since (see sumEach). now is the clock at the start of the read.
func (l *Log) sum(ctx context.Context, counter string, legacy []time.Time, windows []window, now time.Time) (int64, error) {
	total, _, err := l.sumEach(ctx, counter, legacy, windows, now)
	return total, err
}

// sumEach is sum, returning each window's own sum too, in the order of windows.
//
// A part of a window is read with the node's sum of its rows and the writers' marks beside it
// (one query, one partition: a consistent view of both), and the pair is cached. A window that
// settled before the read was sent never changes afterwards, so its sums are final and never
// read again. A window that ended but has not settled can still be written (a late retry, a
// slow writer); its cached sums are used only if the marks read now equal those read with them
// (one query per window for all its parts), since every write to a partition changes its
// writer's mark (see flusher). A window still filling, and every part whose marks changed, is
// summed again. So a hot counter's total sums on the node the events of the window filling
// now, not those of its grace and settle time. One query per partition, not one naming
// several: the node reads the partitions of an aggregate over an IN list one after another,
// which measured slower than eight single-partition queries at once (docs/sizing.md).
func (l *Log) sumEach(ctx context.Context, counter string, legacy []time.Time, windows []window, now time.Time) (int64, []int64, error) {
	var reads []read
	var checks []check
	each := make([]atomic.Int64, len(windows))
	for _, b := range legacy {
		reads = append(reads, read{legacy: true, start: b, win: -1})
	}
	for i, w := range windows {
		if len(w.parts) > 1 {
			reads = append(reads, read{start: w.start, mixed: w.parts, win: i})
			continue
		}
		settled, ended := l.settled(w.start, now), !now.Before(w.start.Add(l.cfg.width))
		var unsure []int
		for p := range w.parts[0] {
			c, ok := l.sums.get(partKey{counter, w.start.UnixMilli(), p})
			switch {
			case ok && c.final:
				each[i].Add(c.sum)
			case ok && ended && !settled:
				unsure = append(unsure, p)
			default:
				reads = append(reads, read{start: w.start, part: p, win: i, final: settled})
			}
		}
		if len(unsure) > 0 {
			checks = append(checks, check{start: w.start, parts: unsure, win: i})
		}
	}
	var legacySum atomic.Int64
	add := func(r read, s int64) {
		if r.win < 0 {
			legacySum.Add(s)
		} else {
			each[r.win].Add(s)
		}
	}
	changed := make([][]read, len(checks))
	err := parallel.ForEach(ctx, len(reads)+len(checks), readConcurrency, func(ctx context.Context, i int) error {
		if i >= len(reads) {
			c := checks[i-len(reads)]
			s, again, err := l.recheck(ctx, counter, c)
			each[c.win].Add(s)
			changed[i-len(reads)] = again
			return err
		}
		s, err := l.sumRead(ctx, counter, reads[i])
		add(reads[i], s)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	var again []read
	for _, c := range changed {
		again = append(again, c...)
	}
	err = parallel.ForEach(ctx, len(again), readConcurrency, func(ctx context.Context, i int) error {
		s, err := l.sumRead(ctx, counter, again[i])
		add(again[i], s)
		return err
	})
	sums := make([]int64, len(windows))
	total := legacySum.Load()
	for i := range each {
		sums[i] = each[i].Load()
		total += sums[i]
	}
	return total, sums, err
}

// settled reports whether window w takes no write any more at now: its end plus the grace
// period and the settle time have passed (what a rollup waits for).
func (l *Log) settled(w, now time.Time) bool {
	return !now.Before(w.Add(l.cfg.width + l.cfg.grace + l.cfg.settle))
}

// recheck reads the marks of c's parts and returns the cached sum of those unchanged since
// they were cached, and a read for each of the others.
func (l *Log) recheck(ctx context.Context, counter string, c check) (int64, []read, error) {
	marks, err := l.readMarks(ctx, counter, c.start, c.parts)
	if err != nil {
		return 0, nil, fmt.Errorf("events: read marks of window %v of %q: %w", c.start, counter, err)
	}
	var sum int64
	var again []read
	for _, p := range c.parts {
		if cached, ok := l.sums.get(partKey{counter, c.start.UnixMilli(), p}); ok && sameMarks(cached.marks, marks[p]) {
			sum += cached.sum
			continue
		}
		again = append(again, read{start: c.start, part: p, win: c.win})
	}
	return sum, again, nil
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
		s, err = l.sumPart(ctx, counter, r)
	}
	if err != nil {
		return 0, fmt.Errorf("events: sum window %v of %q: %w", r.start, counter, err)
	}
	return s, nil
}

// sumPart has the node sum one part of a window, reads the writers' marks in the same query,
// and caches both.
func (l *Log) sumPart(ctx context.Context, counter string, r read) (int64, error) {
	var s int64
	var m map[gocql.UUID]int64
	err := l.session.Query(l.q.sumPart, counter, r.start, r.part).WithContext(ctx).Consistency(l.cfg.consistency).Scan(&s, &m)
	if err != nil {
		return 0, err
	}
	l.sums.put(partKey{counter, r.start.UnixMilli(), r.part}, partSum{sum: s, marks: m, final: r.final})
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
