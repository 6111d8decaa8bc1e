package events

import (
	"context"
	"fmt"
	"time"
)

// rollupState is a counter's rollup row: the total of every bucket before watermark.
type rollupState struct {
	watermark time.Time
	total     int64
	exists    bool
}

// Total returns the counter's total: its rollup plus every bucket from the rollup's own
// watermark to now. Reading the buckets from the watermark of the same row that gave the
// total makes a read exact while a rollup races it: buckets folded after the row was read are
// still summed here (folding never deletes events) and none is counted twice.
//
// A counter without events has total 0. The cost is one rollup read, one index slice and one
// read per unfolded bucket, whatever the counter's history.
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
	sum, _, err := l.sumBuckets(ctx, counter, st, l.readEnd(l.cfg.now()))
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
	iter := q.Iter()
	st.exists = iter.Scan(&st.watermark, &st.total)
	if err := iter.Close(); err != nil {
		return rollupState{}, fmt.Errorf("events: read rollup of %q: %w", counter, err)
	}
	return st, nil
}

// sumBuckets sums the events of the indexed buckets from st's watermark (from the first
// bucket when no rollup exists) up to end, exclusive, and reports how many buckets it read.
func (l *Log) sumBuckets(ctx context.Context, counter string, st rollupState, end time.Time) (int64, int, error) {
	q := l.session.Query(l.q.listAllBuckets, counter, end)
	if st.exists {
		q = l.session.Query(l.q.listBuckets, counter, st.watermark, end)
	}
	iter := q.WithContext(ctx).Consistency(l.cfg.consistency).Iter()
	var buckets []time.Time
	var b time.Time
	for iter.Scan(&b) {
		buckets = append(buckets, b)
	}
	if err := iter.Close(); err != nil {
		return 0, 0, fmt.Errorf("events: list buckets of %q: %w", counter, err)
	}
	var total int64
	for _, b := range buckets {
		var s int64
		err := l.session.Query(l.q.sumBucket, counter, b).WithContext(ctx).
			Consistency(l.cfg.consistency).Scan(&s)
		if err != nil {
			return 0, 0, fmt.Errorf("events: sum bucket %v of %q: %w", b, counter, err)
		}
		total += s
	}
	return total, len(buckets), nil
}
