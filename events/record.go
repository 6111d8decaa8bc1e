package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/cassdedup/cassdedup/internal/flights"
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
	// request's arrival). It selects the window, so it must be the same on every retry.
	Time time.Time
}

// Record stores e. While e's window is open it needs no lightweight transaction: the row's key
// is (counter, window, part, id), with the part a hash of the id, so recording the same event
// twice writes the same row twice. An event whose window closed (its end plus the grace period
// passed: a lagging consumer, a late retry) is counted once in the window open now, through a
// late claim: a few reads and one LWT (docs/eventlog.md). RecordBatch stores many events
// at once, at one LWT per group of late events instead of one each.
//
// It fails with ErrInvalidCounter, ErrInvalidEventID, ErrMissingEventTime, ErrFutureEvent, or
// ErrEventExpired for an event older than the Log's retention (WithLogRetention): its rows may
// be gone, so it is refused rather than counted again. Windows are judged by the cluster's
// clock (the Log's own plus its measured offset): while that offset is not known within a
// quarter of the settle time, Record writes nothing and fails with ErrClockOffset.
// A failed Record may or may not have stored the event; record it again, at any time.
func (l *Log) Record(ctx context.Context, e Event) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := l.checked(ctx, e); err != nil {
		return err
	}
	if err := l.checkClock(ctx); err != nil {
		return err
	}
	window, err := l.ownWindow(ctx, e)
	if err != nil {
		return err
	}
	// The late path of one event is RecordBatch's, so both claim in the same table.
	return l.recordItems(ctx, []*lateItem{l.newItem(e, window, l.cfg.Now())})
}

// errMissedWindow says an on-time write was not made, or not acknowledged, while its window
// could still take it: the window closed before the write was sent, or the write was not
// acknowledged within half the settle time after the window closed. The late path then decides,
// after the window settled, whether the row is there.
var errMissedWindow = errors.New("events: the window closed before the write landed")

// store writes e's row in window, which is open, after the counter's start and the window's
// index row. Those two writes can take long (the start is an LWT), so the window is checked
// again when the row's write is sent, and the write must be acknowledged within half the settle
// time after the window closed: every on-time write then lands before any rollup folds the
// window, which is what totals and the late path rely on. When either fails it returns
// errMissedWindow. The row goes out with the other rows queued for its partition (see write).
func (l *Log) store(ctx context.Context, e Event, window time.Time) error {
	if err := l.ensureStarted(ctx, e.Counter, window); err != nil {
		return err // started by ownWindow already, unless a caller skipped it
	}
	if err := l.ensureIndexed(ctx, e.Counter, window); err != nil {
		return err
	}
	if l.closed(e.Counter, window, l.cfg.Now()) || !l.cfg.Now().Before(l.landBy(e.Counter, window)) {
		return errMissedWindow
	}
	if err := l.write(ctx, e, window); err != nil {
		return wrapRecord(e, err)
	}
	l.switchWidth(ctx, e.Counter)
	return nil
}

// ownWindow returns the start of e's own window: its time truncated to the width in effect
// then, read after the counter started (so its first width is stored) unless the widths this
// Log read last still hold for e's time and for now (the window open now, for the late path).
func (l *Log) ownWindow(ctx context.Context, e Event) (time.Time, error) {
	if err := l.startedWidths(ctx, e.Counter, e.Time); err != nil {
		return time.Time{}, err
	}
	return l.windowOf(e.Counter, e.Time), nil
}

// startedWidths starts counter (so its first width is stored) and reads its widths unless
// those cached hold for t and for now.
func (l *Log) startedWidths(ctx context.Context, counter string, t time.Time) error {
	if err := l.ensureStarted(ctx, counter, t); err != nil {
		return err
	}
	return l.ensureWidths(ctx, counter, maxTime(t, l.cfg.Now()))
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// landBy is when an on-time write to window must have been acknowledged: half the settle time
// after the window closed, leaving the other half for clock skew between writers and rollups.
func (l *Log) landBy(counter string, window time.Time) time.Time {
	return l.writerEnd(counter, window).Add(l.cfg.grace + l.cfg.settle/2)
}

// partOf picks the part of an event from its id alone, so every retry lands on the same row.
func partOf(id string, parts int) int { return int(xxhash.Sum64String(id) % uint64(parts)) }

// check validates e against the clock.
func (l *Log) check(e Event) error {
	if err := ValidateCounter(e.Counter); err != nil {
		return err
	}
	if err := ValidateEventID(e.ID); err != nil {
		return err
	}
	if e.Time.IsZero() {
		return fmt.Errorf("%w: event %q", ErrMissingEventTime, e.ID)
	}
	now := l.cfg.Now()
	if e.Time.After(now.Add(l.cfg.skew)) {
		return fmt.Errorf("%w: event %q at %v, clock %v", ErrFutureEvent, e.ID, e.Time, now)
	}
	if l.expired(e.Time, now) {
		l.stats.expired.Add(1)
		return fmt.Errorf("%w: event %q of %q at %v is older than the retention %v (clock %v): not recorded",
			ErrEventExpired, e.ID, e.Counter, e.Time.UTC(), l.cfg.logRetention, now.UTC())
	}
	return nil
}

// ensureIndexed stores the window's index row, with this Log's parts, before the window's
// first event, so an event row never exists without the index row through which rollups and
// reads find it and learn how many parts to read.
func (l *Log) ensureIndexed(ctx context.Context, counter string, window time.Time) error {
	k := windowKey{counter, window.UnixMilli()}
	return once(ctx, &l.indexing, k, func() bool { return has(l, l.indexed, k) }, func() error {
		err := l.session.Query(l.q.insertWindow, counter, dayOf(window), window, l.cfg.parts, l.rowTTL()).
			WithContext(ctx).Consistency(l.cfg.Consistency).Idempotent(true).Exec()
		if err != nil {
			return fmt.Errorf("events: index window %v of %q: %w", window, counter, err)
		}
		l.stats.indexWrites.Add(1)
		remember(l, l.indexed, k, indexedCacheSize)
		return nil
	})
}

// once runs do for k unless known() says it is done, one call of k at a time: the first
// writers of a new window or counter would otherwise all send the same write (an LWT, for a
// counter) at once and contend for it.
func once[K comparable](ctx context.Context, set *flights.Set[K, struct{}], k K, known func() bool, do func() error) error {
	for !known() {
		running, done := set.Enter(k, struct{}{})
		if !running {
			err := do()
			set.Leave(k)
			return err
		}
		set.Leave(k)
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// has reports whether k is in m.
func has[K comparable](l *Log, m map[K]struct{}, k K) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := m[k]
	return ok
}

// remember adds k to m, emptying m first when it holds limit keys.
func remember[K comparable](l *Log, m map[K]struct{}, k K, limit int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(m) >= limit {
		clear(m)
	}
	m[k] = struct{}{}
}

// ensureStarted gives the counter's rollup row a since (the first day a read of a counter
// without a watermark must slice) before this Log indexes a window of it. The day reaches back
// past any window another writer can still accept, clock skew included, so no window of the
// counter starts before it. Once per counter and process: a plain read of the row first, which
// also gives the widths, and an LWT only when the row has no since yet. A since is only ever
// set by that LWT, so one a quorum read returns is committed, and the LWT would not apply.
func (l *Log) ensureStarted(ctx context.Context, counter string, t time.Time) error {
	return once(ctx, &l.starting, counter, func() bool { return has(l, l.started, counter) }, func() error {
		if started, err := l.readWidths(ctx, counter); err != nil || started {
			if started {
				remember(l, l.started, counter, startedCacheSize)
			}
			return err
		}
		earliest := l.cfg.Now().Add(-l.cfg.coldWidth - l.cfg.grace - 2*l.cfg.skew)
		since := dayOf(earliest)
		if w := dayOf(t); w.Before(since) {
			since = w
		}
		// The counter's first width, from the beginning: every window of it is of the width
		// the first writer was made with until an entry says otherwise.
		first := map[time.Time]int{time.Unix(0, 0).UTC(): int(l.cfg.width / time.Millisecond)}
		q := l.session.Query(l.q.setSince, since, first, counter).WithContext(ctx).
			Consistency(l.cfg.Consistency).SerialConsistency(l.cfg.Serial)
		if _, err := q.MapScanCAS(map[string]any{}); err != nil {
			return fmt.Errorf("events: start counter %q: %w", counter, err)
		}
		l.stats.starts.Add(1)
		remember(l, l.started, counter, startedCacheSize)
		return nil
	})
}

// touch remembers that counter has events in window, for RunRollups.
func (l *Log) touch(counter string, window time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.active[counter]; ok && !last.Before(window) {
		return
	}
	l.noteWrite(counter, window)
	if _, ok := l.active[counter]; !ok && len(l.active) >= activeMax {
		return // RollupEvery or another process folds it; the total stays exact either way
	}
	l.active[counter] = window
}
