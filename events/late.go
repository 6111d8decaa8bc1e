package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// lateState holds what the late path needs: its statements, and how it waits for a closed
// window's last on-time writes to land (a timer; tests replace it).
type lateState struct {
	readParts, readEvent, readLegacy, claim, readClaim, move string
	batch                                                    batchQueries
	sleep                                                    func(ctx context.Context, d time.Duration) error
}

// maxLateRounds bounds how often one Record follows a claim that other writers moved. A claim
// moves only after its window closed and settled, so losing more than a couple of rounds in a
// row means writers keep racing it, and the caller may retry.
const maxLateRounds = 5

// newLateState builds the late path's statements over the Log's tables: earlier releases'
// claims, the first layout's events, the spread layout's events and windows, and the late
// slices where the batches claim.
func newLateState(t tables) lateState {
	claims, legacy, events, windows, slices := t.lateClaims, t.events, t.windowEvents, t.windows, t.lateSlices
	return lateState{
		readParts:  "SELECT parts FROM " + windows + " WHERE counter = ? AND day = ? AND bucket = ?",
		readEvent:  "SELECT event_id FROM " + events + " WHERE counter = ? AND bucket = ? AND part = ? AND event_id = ?",
		readLegacy: "SELECT event_id FROM " + legacy + " WHERE counter = ? AND bucket = ? AND event_id = ?",
		claim:      "INSERT INTO " + claims + " (counter, bucket, event_id, target, claimed_at) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		readClaim:  "SELECT target FROM " + claims + " WHERE counter = ? AND bucket = ? AND event_id = ?",
		move:       "UPDATE " + claims + " USING TTL ? SET target = ?, claimed_at = ? WHERE counter = ? AND bucket = ? AND event_id = ? IF target = ?",
		batch: batchQueries{
			holds:      "SELECT event_id FROM " + events + " WHERE counter = ? AND bucket = ? AND part = ? AND event_id IN ?",
			heldLegacy: "SELECT event_id FROM " + legacy + " WHERE counter = ? AND bucket = ? AND event_id IN ?",
			oldClaims:  "SELECT event_id FROM " + claims + " WHERE counter = ? AND bucket = ? AND event_id IN ?",
			claim:      "INSERT INTO " + slices + " (counter, second, event_id, bucket, target, claimed_at) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
			move:       "UPDATE " + slices + " USING TTL ? SET target = ?, claimed_at = ? WHERE counter = ? AND second = ? AND event_id = ? IF target = ?",
			read:       "SELECT event_id, target FROM " + slices + " WHERE counter = ? AND second = ? AND event_id IN ?",
		},
		sleep: loop.Sleep,
	}
}

// WithLateTable names the table of late claims, where a Log remembers the window each late
// event is counted in (default "counter_late_claims").
func WithLateTable(name string) Option {
	return func(c *config) error { c.lateClaims = name; return nil }
}

// closed reports whether window w takes no more on-time writes at now: its end plus the grace
// period has passed, so a rollup may fold it once the settle time has passed too.
func (l *Log) closed(counter string, w, now time.Time) bool {
	return !now.Before(l.writerEnd(counter, w).Add(l.cfg.grace))
}

// recordLate stores e, whose own window closed, exactly once (docs/eventlog.md says why):
// nothing if its row is in its own window; else the window its late claim names, claimed now
// if there is none, and moved to the open window if the named one closed without the row.
func (l *Log) recordLate(ctx context.Context, e Event, own time.Time) error {
	if found, err := l.settledHolds(ctx, e, own); err != nil || found {
		return err // recorded on time: a duplicate
	}
	if found, err := l.heldLegacy(ctx, e); err != nil || found {
		return err // recorded by an earlier release
	}
	target, err := l.claimLate(ctx, e, own, time.Time{})
	for range maxLateRounds {
		if err != nil {
			return err
		}
		if !l.closed(e.Counter, target, l.cfg.Now()) {
			// The same row as every writer that reads this claim.
			if err := l.store(ctx, e, target); !errors.Is(err, errMissedWindow) {
				return err
			}
		}
		if found, err := l.settledHolds(ctx, e, target); err != nil || found {
			return err
		}
		// The claim's window closed without the row (its writer stopped between the claim and
		// the write) and no write to it can land any more: re-home the event.
		target, err = l.claimLate(ctx, e, own, target)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: events: late claim of %q in %q moved %d times by other writers", observe.ErrInProgress, e.ID, e.Counter, maxLateRounds)
}

// settledHolds waits until every on-time write to window w has landed (its end plus the grace
// period and the settle time have passed), then reports whether e's row is in w.
func (l *Log) settledHolds(ctx context.Context, e Event, w time.Time) (bool, error) {
	if d := l.settledAt(e.Counter, w).Sub(l.cfg.Now()); d > 0 {
		if err := l.late.sleep(ctx, d); err != nil {
			return false, err
		}
	}
	return l.holds(ctx, e, w)
}

// holds reports whether e's row is in window w, in the part of any parts value its writers
// recorded in the window index (an event row is never written before its index row).
func (l *Log) holds(ctx context.Context, e Event, w time.Time) (bool, error) {
	iter := l.session.Query(l.late.readParts, e.Counter, dayOf(w), w).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	var parts []int
	var p int
	for iter.Scan(&p) {
		parts = append(parts, p)
	}
	if err := iter.Close(); err != nil {
		return false, fmt.Errorf("events: read parts of window %v of %q: %w", w, e.Counter, err)
	}
	for _, p := range parts {
		iter := l.session.Query(l.late.readEvent, e.Counter, w, partOf(e.ID, p), e.ID).WithContext(ctx).
			Consistency(l.cfg.Consistency).Iter()
		var id string
		found := iter.Scan(&id)
		if err := iter.Close(); err != nil {
			return false, fmt.Errorf("events: look up %q in window %v of %q: %w", e.ID, w, e.Counter, err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}

// heldLegacy reports whether an earlier release recorded e in the first layout (counter_events,
// in the bucket of e's time), so a retry across the upgrade is not counted again.
func (l *Log) heldLegacy(ctx context.Context, e Event) (bool, error) {
	bucket := e.Time.UTC().Truncate(l.cfg.legacyWidth)
	iter := l.session.Query(l.late.readLegacy, e.Counter, bucket, e.ID).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	var id string
	found := iter.Scan(&id)
	if err := iter.Close(); err != nil {
		return false, fmt.Errorf("events: look up %q in bucket %v of %q: %w", e.ID, bucket, e.Counter, err)
	}
	return found, nil
}

// claimLate claims e for the window open now, with INSERT ... IF NOT EXISTS when from is zero,
// else by moving the claim from window from (UPDATE ... IF target = from). It returns the
// window the claim names afterwards: the open one if the write applied, else the one another
// writer stored, which every writer then uses.
func (l *Log) claimLate(ctx context.Context, e Event, own, from time.Time) (time.Time, error) {
	if err := l.startedWidths(ctx, e.Counter, l.cfg.Now()); err != nil {
		return time.Time{}, err
	}
	now := l.cfg.Now()
	mine := l.windowOf(e.Counter, now)
	op, q := "late claim", l.session.Query(l.late.claim, e.Counter, own, e.ID, mine, now.UTC(), l.rowTTL())
	if !from.IsZero() {
		op, q = "late move", l.session.Query(l.late.move, l.rowTTL(), mine, now.UTC(), e.Counter, own, e.ID, from)
	}
	applied, row, err := cas.Resolve(ctx, cas.Conditional{
		Op: op, Write: q.WithContext(ctx), Read: l.session.Query(l.late.readClaim, e.Counter, own, e.ID).WithContext(ctx),
		Applied:  func(row cas.Row, found bool) bool { return found && targetOf(row).Equal(mine) },
		Patience: rollupPatience, Observe: observe.ObserveCAS(l.cfg.Observer, observe.Key{e.Counter, e.ID}),
	}, l.cfg.Consistency, l.cfg.Serial)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("events: %s of %q in %q: %w", op, e.ID, e.Counter, err)
	case applied:
		return mine, nil
	case targetOf(row).IsZero():
		// Claims outlive every retry Record accepts, so only a missing table or a user's delete gets here.
		return time.Time{}, fmt.Errorf("%w: events: %s of %q in %q found no claim", cas.ErrMalformedResult, op, e.ID, e.Counter)
	}
	return targetOf(row), nil
}

// targetOf returns the target window of a claim row; zero when the row has none.
func targetOf(row cas.Row) time.Time {
	t, _ := row["target"].(time.Time)
	return t.UTC()
}
