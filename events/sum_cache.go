package events

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// sumCacheSize bounds the partition sums a Log keeps. Forgetting one costs a total one read of
// the partition, never correctness.
const sumCacheSize = 1 << 16

// sumCache holds the sums a Log read of partitions of counter_window_events, each with the
// writers' marks read in the same query. It is safe for concurrent use.
type sumCache struct {
	mu sync.Mutex
	m  map[partKey]partSum
}

// partSum is one partition's sum, read with the partition's marks. A final sum was read after
// its window settled: no write can change it any more.
type partSum struct {
	sum   int64
	marks map[gocql.UUID]int64
	final bool
	sent  time.Time // when the read was sent, by the Log's clock
}

func newSumCache() *sumCache { return &sumCache{m: make(map[partKey]partSum)} }

func (c *sumCache) get(k partKey) (partSum, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	return s, ok
}

// put stores s unless a final sum is there already (it is at least as new). A final sum keeps
// no marks: it is never checked.
func (c *sumCache) put(k partKey, s partSum) {
	if s.final {
		s.marks = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok && old.final {
		return
	}
	if len(c.m) >= sumCacheSize {
		clear(c.m)
	}
	c.m[k] = s
}

// sameMarks reports whether two reads of a partition's marks saw the same writes: every write
// changes its writer's mark, so equal marks mean no write landed between the reads. A
// partition without rows has no marks.
func sameMarks(a, b map[gocql.UUID]int64) bool { return maps.Equal(a, b) }

// checkConcurrency bounds the marks reads one total has in flight, beside its sums. A mark is
// one static cell, so a read of it is far cheaper than a sum.
const checkConcurrency = 16

// readMarks reads the marks of the checked parts, one single-partition query each, in parallel:
// the node reads the partitions of an IN list one after another, which measured 45 ms at the
// p50 for the 48 partitions a hot counter's total checks (docs/sizing.md). A part without rows
// is missing from the result.
func (l *Log) readMarks(ctx context.Context, counter string, checks []check) (map[partKey]map[gocql.UUID]int64, error) {
	got := make([]map[gocql.UUID]int64, len(checks))
	err := parallel.ForEach(ctx, len(checks), checkConcurrency, func(ctx context.Context, i int) error {
		c := checks[i]
		iter := l.session.Query(l.q.readMarks, counter, c.start, c.part).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
		iter.Scan(&got[i])
		return iter.Close()
	})
	if err != nil {
		return nil, err
	}
	l.stats.checks.Add(int64(len(checks)))
	out := make(map[partKey]map[gocql.UUID]int64, len(checks))
	for i, c := range checks {
		if got[i] != nil {
			out[partKey{counter, c.start.UnixMilli(), c.part}] = got[i]
		}
	}
	return out, nil
}
