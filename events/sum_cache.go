package events

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"
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

// readMarks reads the marks of the checked parts in one query; a part without rows is missing
// from the result.
func (l *Log) readMarks(ctx context.Context, counter string, checks []check) (map[partKey]map[gocql.UUID]int64, error) {
	var buckets []time.Time
	var parts []int
	for _, c := range checks {
		if !slices.ContainsFunc(buckets, c.start.Equal) {
			buckets = append(buckets, c.start)
		}
		if !slices.Contains(parts, c.part) {
			parts = append(parts, c.part)
		}
	}
	iter := l.session.Query(l.q.readMarks, counter, buckets, parts).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	out := make(map[partKey]map[gocql.UUID]int64, len(checks))
	var b time.Time
	var p int
	var m map[gocql.UUID]int64
	for iter.Scan(&b, &p, &m) {
		out[partKey{counter, b.UnixMilli(), p}] = m
		m = nil
	}
	return out, iter.Close()
}
