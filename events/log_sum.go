package events

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// maxReadPartitions bounds the partitions one sum query names (windows x parts of its IN
// lists), below the guardrails clusters commonly set on IN lists and their cartesian products,
// and small enough that one query never holds a whole long tail.
const maxReadPartitions = 32

// read is one query of a sum: a first-layout bucket, every part of some windows written with
// one parts value (summed by Cassandra, one query for all of them), or a window written with
// several parts values (summed here by event id).
type read struct {
	legacy bool
	starts []time.Time // the windows; one for legacy and mixed reads
	parts  []int       // the parts summed by one query
	mixed  []int       // parts values of a mixed window
}

// sum reads every legacy bucket and every part of every window, in parallel. Windows that
// share a single parts value are summed by the node, up to maxReadPartitions partitions a
// query, so a total of the usual tail is one query and no event row crosses the network.
func (l *Log) sum(ctx context.Context, counter string, legacy []time.Time, windows []window) (int64, error) {
	var reads []read
	for _, b := range legacy {
		reads = append(reads, read{legacy: true, starts: []time.Time{b}})
	}
	byParts := make(map[int][]time.Time)
	var order []int // parts values in the order met, so the reads do not depend on map order
	for _, w := range windows {
		if len(w.parts) > 1 {
			reads = append(reads, read{starts: []time.Time{w.start}, mixed: w.parts})
			continue
		}
		p := w.parts[0]
		if _, ok := byParts[p]; !ok {
			order = append(order, p)
		}
		byParts[p] = append(byParts[p], w.start)
	}
	for _, p := range order {
		reads = append(reads, groupReads(byParts[p], p)...)
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

// groupReads splits the windows written with parts parts into reads of at most
// maxReadPartitions partitions each: several windows a read, or a window's parts over several.
func groupReads(starts []time.Time, parts int) []read {
	perRead := max(1, maxReadPartitions/parts) // windows
	partsPerRead := min(parts, maxReadPartitions)
	var out []read
	for i := 0; i < len(starts); i += perRead {
		ws := starts[i:min(i+perRead, len(starts))]
		for p := 0; p < parts; p += partsPerRead {
			ps := make([]int, 0, partsPerRead)
			for q := p; q < min(p+partsPerRead, parts); q++ {
				ps = append(ps, q)
			}
			out = append(out, read{starts: ws, parts: ps})
		}
	}
	return out
}

func (l *Log) sumRead(ctx context.Context, counter string, r read) (int64, error) {
	var s int64
	var err error
	switch {
	case r.legacy:
		err = l.session.Query(l.q.sumLegacy, counter, r.starts[0]).WithContext(ctx).Consistency(l.cfg.consistency).Scan(&s)
	case r.mixed != nil:
		s, err = l.sumMixed(ctx, counter, r.starts[0], r.mixed)
	default:
		err = l.session.Query(l.q.sumParts, counter, r.starts, r.parts).WithContext(ctx).Consistency(l.cfg.consistency).Scan(&s)
	}
	if err != nil {
		return 0, fmt.Errorf("events: sum windows from %v of %q: %w", r.starts[0], counter, err)
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
