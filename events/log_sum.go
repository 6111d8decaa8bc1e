package events

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

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
}

// sum reads every legacy bucket and every part of every window, in parallel, each summed by
// the node, so no event row crosses the network. One query per partition, not one naming
// several: the node reads the partitions of an aggregate over an IN list one after another,
// which measured slower than eight single-partition queries at once (docs/sizing.md).
func (l *Log) sum(ctx context.Context, counter string, legacy []time.Time, windows []window) (int64, error) {
	total, _, err := l.sumEach(ctx, counter, legacy, windows)
	return total, err
}

// sumEach is sum, returning each window's own sum too, in the order of windows.
func (l *Log) sumEach(ctx context.Context, counter string, legacy []time.Time, windows []window) (int64, []int64, error) {
	var reads []read
	for _, b := range legacy {
		reads = append(reads, read{legacy: true, start: b, win: -1})
	}
	for i, w := range windows {
		if len(w.parts) > 1 {
			reads = append(reads, read{start: w.start, mixed: w.parts, win: i})
			continue
		}
		for p := range w.parts[0] {
			reads = append(reads, read{start: w.start, part: p, win: i})
		}
	}
	if len(reads) == 0 {
		return 0, nil, nil
	}
	var total atomic.Int64
	each := make([]atomic.Int64, len(windows))
	err := parallel.ForEach(ctx, len(reads), readConcurrency, func(ctx context.Context, i int) error {
		s, err := l.sumRead(ctx, counter, reads[i])
		total.Add(s)
		if w := reads[i].win; w >= 0 {
			each[w].Add(s)
		}
		return err
	})
	sums := make([]int64, len(windows))
	for i := range each {
		sums[i] = each[i].Load()
	}
	return total.Load(), sums, err
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
