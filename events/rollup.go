package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// RollupResult reports what one Rollup call did.
type RollupResult struct {
	// Watermark is the counter's watermark afterwards: every bucket before it is in Total.
	Watermark time.Time
	// Total is the rolled-up total at Watermark.
	Total int64
	// Folded is the number of buckets this call folded; 0 when nothing was closed or another
	// worker folded them first.
	Folded int
}

// maxRollupRounds bounds how often Rollup re-reads after losing a race. A loss means another
// worker moved the watermark, so a few rounds always suffice unless workers keep winning.
const maxRollupRounds = 5

// Rollup folds the counter's closed buckets into its rollup row, exactly once: it reads the
// row at the serial consistency, sums the buckets from the watermark up to the closing
// horizon (buckets that ended more than the grace period plus the settle time ago), and moves
// the watermark with a lightweight transaction conditional on the watermark it read. Two
// workers racing compute the same total for the same horizon; the loser re-reads and finds
// nothing left to fold. Rollup may run anywhere, any number of times.
func (l *Log) Rollup(ctx context.Context, counter string) (RollupResult, error) {
	if err := l.checkCall(ctx); err != nil {
		return RollupResult{}, err
	}
	if err := ValidateCounter(counter); err != nil {
		return RollupResult{}, err
	}
	for range maxRollupRounds {
		res, done, err := l.rollupRound(ctx, counter)
		if err != nil || done {
			return res, err
		}
	}
	st, err := l.readRollup(ctx, counter, true)
	return RollupResult{Watermark: st.watermark, Total: st.total}, err
}

// PlanRollup returns what Rollup would do now, and writes nothing: the watermark it would
// move to, the total there and the number of buckets it would fold (0 when nothing is
// closed). Its reads are Rollup's, at the serial consistency.
func (l *Log) PlanRollup(ctx context.Context, counter string) (RollupResult, error) {
	if err := l.checkCall(ctx); err != nil {
		return RollupResult{}, err
	}
	if err := ValidateCounter(counter); err != nil {
		return RollupResult{}, err
	}
	_, res, _, err := l.nextRollup(ctx, counter)
	return res, err
}

// nextRollup reads the rollup row and sums the closed buckets after its watermark: the row
// read, the result a fold would write, and whether there is nothing to fold.
func (l *Log) nextRollup(ctx context.Context, counter string) (rollupState, RollupResult, bool, error) {
	st, err := l.readRollup(ctx, counter, true)
	if err != nil {
		return st, RollupResult{}, false, err
	}
	h := l.horizon(l.cfg.now())
	if st.exists && !st.watermark.Before(h) {
		return st, RollupResult{Watermark: st.watermark, Total: st.total}, true, nil
	}
	sum, n, err := l.sumBuckets(ctx, counter, st, h)
	if err != nil {
		return st, RollupResult{}, false, err
	}
	return st, RollupResult{Watermark: h, Total: st.total + sum, Folded: n}, false, nil
}

// rollupRound makes one attempt; done is false when another worker moved the watermark.
func (l *Log) rollupRound(ctx context.Context, counter string) (RollupResult, bool, error) {
	st, res, done, err := l.nextRollup(ctx, counter)
	if err != nil || done {
		return res, done, err
	}
	applied, err := l.moveWatermark(ctx, counter, st, res)
	if err != nil {
		return RollupResult{}, false, err
	}
	return res, applied, nil
}

// rollupPatience bounds the serial reads that settle a watermark move whose outcome is unknown.
const rollupPatience = 2 * time.Second

// moveWatermark writes res conditionally on the row still holding st. An unknown outcome is
// settled by lwt.Resolve: a watermark at or past res's is correct whoever wrote it, since every
// worker folding to the same horizon computes the same total; anything else did not apply, and
// the caller reads again.
func (l *Log) moveWatermark(ctx context.Context, counter string, st rollupState, res RollupResult) (bool, error) {
	now := l.cfg.now().UTC()
	q := l.session.Query(l.q.insertRollup, counter, res.Watermark, res.Total, now)
	if st.exists {
		q = l.session.Query(l.q.updateRollup, res.Watermark, res.Total, now, counter, st.watermark)
	}
	reached := func(row lwt.Row, found bool) bool {
		w, _ := row["watermark"].(time.Time)
		return found && !w.Before(res.Watermark)
	}
	applied, _, err := lwt.Resolve(ctx, lwt.Conditional{
		Op: "rollup", Write: q, Read: l.session.Query(l.q.readRollup, counter), Applied: reached,
		Patience: rollupPatience, Observer: l.cfg.observer, Key: lwt.Key{counter},
	}, l.cfg.consistency, l.cfg.serial)
	if err != nil {
		return false, fmt.Errorf("events: move watermark of %q to %v: %w", counter, res.Watermark, err)
	}
	return applied, nil
}

// RollupEvery calls Rollup for each counter every interval until ctx is done, and then
// returns ctx.Err(). It runs in the caller's goroutine. A failed Rollup is retried at the
// next tick; onError, if not nil, is told about it.
func (l *Log) RollupEvery(ctx context.Context, interval time.Duration, onError func(counter string, err error), counters ...string) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("%w: rollup interval %v must be positive", ErrInvalidOption, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, c := range counters {
			if _, err := l.Rollup(ctx, c); err != nil && onError != nil && ctx.Err() == nil {
				onError(c, err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
