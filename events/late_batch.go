package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// lateItem is one event of a RecordBatch or Record call and where it stands. An event starts
// in stepWrite (its own window is open) or stepCheck (it is closed) and ends in stepDone.
type lateItem struct {
	e      Event
	own    time.Time // e's own window
	window time.Time // the window stepWrite writes into: own, or the claim's target
	target time.Time // the window the claim names; zero before the claim
	step   lateStep
	err    error
	// counted: the item is in Stats.LateEvents. An item can take the claim step more than
	// once (its claim's target closed without its row, so the claim moves), and counts once.
	counted bool
}

// countLate adds it to Stats.LateEvents unless it is there already.
func (l *Log) countLate(it *lateItem) {
	if !it.counted {
		it.counted = true
		l.stats.lateEvents.Add(1)
	}
}

// lateStep is what an item needs next.
type lateStep int

const (
	stepWrite  lateStep = iota // write the row into window, which is open by the clock
	stepCheck                  // own closed without the row written here: look for it, then claim
	stepClaim                  // claim the event, or move its claim from a target that closed without the row
	stepVerify                 // the claim's target closed: look for the row there once it settled
	stepDone
)

// lateParallel bounds the groups of one call that read or claim at once.
const lateParallel = 16

// RecordBatch stores evs as Record stores each, and costs the late ones lightweight
// transactions per group, not per event: the late events (whose window closed: a consumer
// catching up, a retry after a restart) of one counter and one second of event time are
// claimed with one conditional batch of counter_late_slices (one Paxos round for up to
// cas.MaxBatchRows events), after one read per part of their own window finds those already
// recorded. The rows of on-time and late events then go out together, one unlogged write per
// partition of counter_window_events with whatever else is queued for it. The package doc
// says why every event still counts once.
//
// An event given twice (the same counter and id) is stored once. It fails with the first
// invalid event's error (ErrInvalidCounter, ErrInvalidEventID, ErrMissingEventTime,
// ErrFutureEvent, naming its position) before anything is written; otherwise with the
// errors of the events it could not store, joined. A failed RecordBatch may have stored any
// of its events; record them again (the whole batch, or any part of it), at any time.
func (l *Log) RecordBatch(ctx context.Context, evs []Event) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	for i, e := range evs {
		if err := l.checked(ctx, e); err != nil {
			return fmt.Errorf("events: event %d of %d: %w", i, len(evs), err)
		}
	}
	// Which windows are closed is judged by the cluster's time, once it is known well enough.
	if err := l.checkClock(ctx); err != nil {
		return err
	}
	items := make([]*lateItem, 0, len(evs))
	seen := make(map[[2]string]bool, len(evs))
	for _, e := range evs {
		own, err := l.ownWindow(ctx, e)
		if err != nil {
			return err
		}
		if k := [2]string{e.Counter, e.ID}; !seen[k] {
			seen[k] = true
			items = append(items, l.newItem(e, own, l.cfg.Now()))
		}
	}
	return l.recordItems(ctx, items)
}

// newItem starts e's item: written into its own window while that is open, else looked for.
func (l *Log) newItem(e Event, own, now time.Time) *lateItem {
	if l.closed(e.Counter, own, now) {
		return &lateItem{e: e, own: own, step: stepCheck}
	}
	return &lateItem{e: e, own: own, window: own, step: stepWrite}
}

// recordItems runs the items' steps in rounds until every one is done: the checks and claims
// of the late events first, then every write at once (so late rows join the on-time rows of
// their partitions), then the checks of claims whose window closed. A round moves an item at
// least one step; the claim of an event moves only when a window settled without its row, so
// maxLateRounds + 2 rounds suffice unless other writers keep racing it.
func (l *Log) recordItems(ctx context.Context, items []*lateItem) error {
	for range maxLateRounds + 2 {
		l.runStep(ctx, items, stepCheck, l.checkOwn)
		l.runStep(ctx, items, stepClaim, l.claimGroup)
		l.writeAll(ctx, items)
		l.runStep(ctx, items, stepVerify, l.verifyTarget)
		if pending(items) == 0 {
			break
		}
	}
	var errs []error
	for _, it := range items {
		switch {
		case it.err != nil:
			errs = append(errs, it.err)
		case it.step != stepDone:
			errs = append(errs, fmt.Errorf("%w: events: late claim of %q in %q moved %d times by other writers",
				observe.ErrInProgress, it.e.ID, it.e.Counter, maxLateRounds))
		}
	}
	return errors.Join(errs...)
}

// pending counts the items not done.
func pending(items []*lateItem) int {
	n := 0
	for _, it := range items {
		if it.step != stepDone {
			n++
		}
	}
	return n
}

// groupKey is a group of items one step handles together: a counter and a window (the own
// window for checks, the target for verifies) or a second of event time (claims).
type groupKey struct {
	counter string
	at      int64
}

// runStep hands the items at step to do, grouped by do's key, at most lateParallel groups at
// once; do sets each item's next step, or its err (and stepDone).
func (l *Log) runStep(ctx context.Context, items []*lateItem, step lateStep, do func(context.Context, []*lateItem)) {
	groups := map[groupKey][]*lateItem{}
	var order []groupKey
	for _, it := range items {
		if it.step != step {
			continue
		}
		k := groupKey{it.e.Counter, l.groupTime(it).UnixMilli()}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], it)
	}
	if len(order) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, lateParallel)
	for _, k := range order {
		for start := 0; start < len(groups[k]); start += cas.MaxBatchRows {
			chunk := groups[k][start:min(start+cas.MaxBatchRows, len(groups[k]))]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				do(ctx, chunk)
			})
		}
	}
	wg.Wait()
}

// groupTime is the time that groups it with others at its step.
func (l *Log) groupTime(it *lateItem) time.Time {
	switch it.step {
	case stepClaim:
		return sliceOf(it.e)
	case stepVerify:
		return it.target
	}
	return it.own
}

// sliceOf is the second of e's time: with its counter, e's partition of counter_late_slices.
// It derives from e alone, never from a setting, so every writer and retry agrees on it.
func sliceOf(e Event) time.Time { return e.Time.UTC().Truncate(time.Second) }

// fail ends it with err.
func (it *lateItem) fail(err error) { it.err, it.step = err, stepDone }

// writeAll writes every item at stepWrite into its window at once, so the rows that share a
// partition go out in one write (see write). An item whose window closed before its write
// landed goes back to the late path: a check of its own window, or of its claim's target.
func (l *Log) writeAll(ctx context.Context, items []*lateItem) {
	var wg sync.WaitGroup
	for _, it := range items {
		if it.step != stepWrite {
			continue
		}
		wg.Go(func() {
			err := l.store(ctx, it.e, it.window)
			switch {
			case errors.Is(err, errMissedWindow) && it.target.IsZero():
				it.step = stepCheck
			case errors.Is(err, errMissedWindow):
				it.step = stepVerify
			case err != nil:
				it.fail(err)
			default:
				it.step = stepDone
			}
		})
	}
	wg.Wait()
}
