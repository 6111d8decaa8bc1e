package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// Event is one increment of a counter.
type Event struct {
	// Counter names the counter.
	Counter string
	// ID names this increment. Recording the same ID again is harmless; it must always carry
	// the same Delta and Time, or the retry overwrites (Delta) or double-counts (Time).
	ID string
	// Delta is added to the counter's total; it may be negative.
	Delta int64
	// Time is when the increment happened, as the caller knows it (a message timestamp, a
	// request's arrival). It selects the bucket, so it must be the same on every retry.
	Time time.Time
}

// Record stores e. It needs no lightweight transaction: the row's key is (counter, bucket,
// id), so recording the same event twice writes the same row twice.
//
// It fails with ErrInvalidCounter, ErrInvalidEventID, ErrMissingEventTime, ErrFutureEvent,
// or ErrBucketClosed once the event's bucket ended more than the grace period ago. A failed
// Record may or may not have stored the event; record it again within the grace period.
func (l *Log) Record(ctx context.Context, e Event) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	bucket, err := l.check(e)
	if err != nil {
		return err
	}
	if err := l.ensureIndexed(ctx, e.Counter, bucket); err != nil {
		return err
	}
	start := time.Now()
	err = l.session.Query(l.q.insertEvent, e.Counter, bucket, e.ID, e.Delta, l.cfg.now().UTC()).
		WithContext(ctx).Consistency(l.cfg.consistency).Idempotent(true).Exec()
	if l.cfg.observer != nil {
		l.cfg.observer.Observe(lwt.Observation{Kind: lwt.ObservedWrite, Key: lwt.Key{e.Counter, e.ID}, Op: "record",
			Latency: time.Since(start), Err: err})
	}
	if err != nil {
		return fmt.Errorf("events: record %q in %q: %w", e.ID, e.Counter, err)
	}
	return nil
}

// check validates e against the clock and returns its bucket.
func (l *Log) check(e Event) (time.Time, error) {
	if err := ValidateCounter(e.Counter); err != nil {
		return time.Time{}, err
	}
	if err := ValidateEventID(e.ID); err != nil {
		return time.Time{}, err
	}
	if e.Time.IsZero() {
		return time.Time{}, fmt.Errorf("%w: event %q", ErrMissingEventTime, e.ID)
	}
	now := l.cfg.now()
	if e.Time.After(now.Add(l.cfg.skew)) {
		return time.Time{}, fmt.Errorf("%w: event %q at %v, clock %v", ErrFutureEvent, e.ID, e.Time, now)
	}
	bucket := l.bucketOf(e.Time)
	if closes := bucket.Add(l.cfg.width + l.cfg.grace); !now.Before(closes) {
		return time.Time{}, fmt.Errorf("%w: event %q in bucket %v closed at %v", ErrBucketClosed, e.ID, bucket, closes)
	}
	return bucket, nil
}

// ensureIndexed stores the bucket's index row before the bucket's first event, so an event
// row never exists without the index row through which rollups and reads find it.
func (l *Log) ensureIndexed(ctx context.Context, counter string, bucket time.Time) error {
	k := bucketKey{counter, bucket.UnixMilli()}
	l.mu.Lock()
	_, ok := l.indexed[k]
	l.mu.Unlock()
	if ok {
		return nil
	}
	err := l.session.Query(l.q.insertBucket, counter, bucket).
		WithContext(ctx).Consistency(l.cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return fmt.Errorf("events: index bucket %v of %q: %w", bucket, counter, err)
	}
	l.mu.Lock()
	if len(l.indexed) >= indexedCacheSize {
		clear(l.indexed)
	}
	l.indexed[k] = struct{}{}
	l.mu.Unlock()
	return nil
}
