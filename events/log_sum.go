package events

import (
	"context"
	"fmt"
	"math/big"
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

// check asks whether a part of a window whose sum a Log cached was written since.
type check struct {
	start time.Time
	part  int
	win   int
}

// sum reads every legacy bucket and every part of every window, in parallel, each summed by
// the node, so no event row crosses the network; sums this Log cached are read again only if
// their partition was written since (see sumEach). now is the clock at the start of the read.
func (l *Log) sum(ctx context.Context, counter string, legacy []time.Time, windows []window, now time.Time) (int64, error) {
	total, _, err := l.sumEach(ctx, counter, legacy, windows, now, false)
	return total, err
}

// sumEach is sum, returning each window's own sum too, in the order of windows; forTotal
// counts its partition sums as a total's (LogStats.TotalSummed).
//
// A part of a window is read with the node's sum of its rows and the writers' marks beside it
// (one query, one partition: a consistent view of both), and the pair is cached. A window that
// settled before the read was sent never changes afterwards, so its sums are final and never
// read again. A window that ended but has not settled can still be written (a late retry, a
// slow writer); its cached sums are used only if the marks read now equal those read with them
// (one read for every such part), since every write to a partition changes its writer's mark
// (see flusher). A window still filling, one ended less than quietAfter ago whose cached sum
// was read before it ended, and every part whose marks changed, is summed again. So a hot
// counter's total sums on the node the events of the window filling now, not those of its
// grace and settle time. One query per partition, not one naming several: the node reads the
// partitions of an aggregate over an IN list one after another, which measured slower than
// eight single-partition queries at once (docs/sizing.md).
func (l *Log) sumEach(ctx context.Context, counter string, legacy []time.Time, windows []window, now time.Time, forTotal bool) (int64, []int64, error) {
	reads, checks, cached := l.planSums(counter, legacy, windows, now)
	got := make([]int64, len(reads))
	var again []read
	var unchanged []partial
	jobs := len(reads)
	if len(checks) > 0 {
		jobs++ // every check in one query
	}
	err := parallel.ForEach(ctx, jobs, readConcurrency, func(ctx context.Context, i int) error {
		if i == len(reads) {
			var err error
			again, unchanged, err = l.recheck(ctx, counter, checks)
			return err
		}
		var err error
		got[i], err = l.sumRead(ctx, counter, reads[i])
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	gotAgain := make([]int64, len(again))
	err = parallel.ForEach(ctx, len(again), readConcurrency, func(ctx context.Context, i int) error {
		var err error
		gotAgain[i], err = l.sumRead(ctx, counter, again[i])
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	if forTotal {
		l.stats.totalSummed.Add(int64(partReads(reads) + partReads(again)))
	}
	parts := append(cached, unchanged...)
	for i, r := range reads {
		parts = append(parts, partial{r.win, got[i]})
	}
	for i, r := range again {
		parts = append(parts, partial{r.win, gotAgain[i]})
	}
	return addPartials(counter, parts, len(windows))
}

// planSums sorts the parts of windows (and the legacy buckets) by how sumEach gets their sums:
// read from the node, checked against the marks read with a cached sum, or taken from the
// cache as final.
func (l *Log) planSums(counter string, legacy []time.Time, windows []window, now time.Time) (reads []read, checks []check, cached []partial) {
	for _, b := range legacy {
		reads = append(reads, read{legacy: true, start: b, win: -1})
	}
	for i, w := range windows {
		if len(w.parts) > 1 {
			reads = append(reads, read{start: w.start, mixed: w.parts, win: i})
			continue
		}
		// The window's end, looked up once: it settles grace + settle after it, and is quiet
		// quietAfter after it.
		end := l.endOf(counter, w.start)
		settled, quiet := !now.Before(end.Add(l.cfg.grace+l.cfg.settle)), !now.Before(end.Add(quietAfter))
		for p := range w.parts[0] {
			c, ok := l.sums.get(partKey{counter, w.start.UnixMilli(), p})
			switch {
			case ok && c.final:
				cached = append(cached, partial{i, c.sum})
				l.stats.reused.Add(1)
			case ok && !settled && (quiet || !c.sent.Before(end)):
				checks = append(checks, check{start: w.start, part: p, win: i})
			default:
				reads = append(reads, read{start: w.start, part: p, win: i, final: settled})
			}
		}
	}
	return reads, checks, cached
}

// partReads returns how many of reads are one part of a window, summed by the node.
func partReads(reads []read) int {
	n := 0
	for _, r := range reads {
		if !r.legacy && r.mixed == nil {
			n++
		}
	}
	return n
}

// partial is one sum of a window (win its index; -1 for a first-layout bucket).
type partial struct {
	win int
	sum int64
}

// addPartials adds up the sums of a read: the total, and each window's, or ErrOverflow.
func addPartials(counter string, parts []partial, windows int) (int64, []int64, error) {
	each := make([]int64, windows)
	var total int64
	var err error
	for _, p := range parts {
		if p.win >= 0 {
			if each[p.win], err = addChecked(each[p.win], p.sum); err != nil {
				return 0, nil, fmt.Errorf("events: sum of %q: %w", counter, err)
			}
		}
		if total, err = addChecked(total, p.sum); err != nil {
			return 0, nil, fmt.Errorf("events: sum of %q: %w", counter, err)
		}
	}
	return total, each, nil
}

// settled reports whether window w takes no write any more at now: its end plus the grace
// period and the settle time have passed (what a rollup waits for).
func (l *Log) settled(counter string, w, now time.Time) bool {
	return !now.Before(l.settledAt(counter, w))
}

// settledAt returns when counter's window starting at w settles: its end plus the grace period
// and the settle time.
func (l *Log) settledAt(counter string, w time.Time) time.Time {
	return l.endOf(counter, w).Add(l.cfg.grace + l.cfg.settle)
}

// quietAfter is how long after a window's end a total sums its parts again without checking
// their marks first: right after its end, the last writes of a filling window are still
// landing, and a check of a sum read while it filled would only add a round before the same
// sum. A sum read after the window ended is checked at once: of the totals read in the quarter
// second after a hot window ends, only the first sums it again.
const quietAfter = 250 * time.Millisecond

// recheck reads the marks of the checked parts and returns the cached sums of the
// parts unchanged since they were cached, and a read for each of the others.
func (l *Log) recheck(ctx context.Context, counter string, checks []check) ([]read, []partial, error) {
	marks, err := l.readMarks(ctx, counter, checks)
	if err != nil {
		return nil, nil, fmt.Errorf("events: read marks of %q: %w", counter, err)
	}
	var again []read
	var unchanged []partial
	for _, c := range checks {
		k := partKey{counter, c.start.UnixMilli(), c.part}
		if cached, ok := l.sums.get(k); ok && sameMarks(cached.marks, marks[k]) {
			unchanged = append(unchanged, partial{c.win, cached.sum})
			l.stats.reused.Add(1)
			continue
		}
		again = append(again, read{start: c.start, part: c.part, win: c.win})
	}
	return again, unchanged, nil
}

func (l *Log) sumRead(ctx context.Context, counter string, r read) (int64, error) {
	var s int64
	var err error
	switch {
	case r.legacy:
		var b *big.Int
		err = l.session.Query(l.q.sumLegacy, counter, r.start).WithContext(ctx).Consistency(l.cfg.Consistency).Scan(&b)
		if err == nil {
			s, err = fromBig(b)
		}
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
	var b *big.Int
	var m map[gocql.UUID]int64
	sent := l.cfg.Now()
	err := l.session.Query(l.q.sumPart, counter, r.start, r.part).WithContext(ctx).Consistency(l.cfg.Consistency).Scan(&b, &m)
	if err != nil {
		return 0, err
	}
	s, err := fromBig(b)
	if err != nil {
		return 0, err
	}
	l.stats.summed.Add(1)
	l.sums.put(partKey{counter, r.start.UnixMilli(), r.part}, partSum{sum: s, marks: m, final: r.final, sent: sent})
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
		iter := l.session.Query(l.q.readPart, counter, start, p).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
		var id string
		var delta int64
		for iter.Scan(&id, &delta) {
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
			var err error
			if total, err = addChecked(total, delta); err != nil {
				_ = iter.Close()
				return 0, err
			}
		}
		if err := iter.Close(); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// fromBig returns a partition's sum, which the node computes as a varint so that it cannot wrap
// (its sum of a bigint column wraps silently past the int64 range), or ErrOverflow.
func fromBig(b *big.Int) (int64, error) {
	switch {
	case b == nil:
		return 0, nil // a partition without rows
	case !b.IsInt64():
		return 0, fmt.Errorf("%w: a partition sums to %v", ErrOverflow, b)
	}
	return b.Int64(), nil
}
