package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// RollupResult reports what one Rollup call did.
type RollupResult struct {
	// Watermark is the counter's watermark afterwards: every window before it is in Total.
	Watermark time.Time
	// Total is the rolled-up total at Watermark.
	Total int64
	// Folded is the number of windows (and first-layout buckets) this call folded; 0 when
	// nothing was closed or another worker folded them first.
	Folded int
	// Lag is how far behind the clock the rollup was before this call: the clock less the start
	// of the oldest closed window (or first-layout bucket) it had not folded, or less the
	// watermark when nothing was closed since; a counter without events in between is not
	// behind. A Lag beyond the maximum (WithMaxRollupLag) comes with an error matching
	// ErrRollupStalled.
	Lag time.Duration
}

// maxRollupRounds bounds how often Rollup re-reads after losing a race. A loss means another
// worker moved the watermark, so a few rounds always suffice unless workers keep winning.
const maxRollupRounds = 5

// The first layout's writers accepted events for an hour after a bucket ended and rollups
// waited five minutes more (its defaults): a bucket of it is folded only after both, in case a
// writer of an earlier release still writes to it.
const legacyClose = time.Hour + 5*time.Minute

// Rollup folds the counter's closed windows into its rollup row, exactly once: it reads the
// row, sums the windows from the watermark up to the closing horizon (windows that ended more
// than the grace period plus the settle time ago), and moves the watermark with a lightweight
// transaction conditional on the watermark it read. Two workers racing compute the same total
// for the same horizon; the loser re-reads, at the serial consistency, and finds nothing left
// to fold. The first read is a plain one: a fold writes the watermark and the total in one
// mutation and a watermark only moves forward, so a stale read can only make the conditional
// write fail, never fold a window twice, and a fold costs one Paxos round instead of two. A worker that stops between the sum and the watermark move leaves the
// row as it was, so the next one folds the same windows. Rollup may run anywhere, any number of
// times. Buckets of the first layout (counter_events) are folded by the same rule once closed.
//
// A counter found further behind than WithMaxRollupLag is folded all the same, and the result
// comes with an error matching ErrRollupStalled (a *RollupStalledError): its oldest windows were
// on their way to expire uncounted. A sum outside the int64 range fails with ErrOverflow and
// moves nothing.
func (l *Log) Rollup(ctx context.Context, counter string) (RollupResult, error) {
	if err := l.checkCall(ctx); err != nil {
		return RollupResult{}, err
	}
	if err := ValidateCounter(counter); err != nil {
		return RollupResult{}, err
	}
	l.stats.rollups.Add(1)
	// A window folded by a time not known well enough could be one a writer still writes to.
	if err := l.checkClock(ctx); err != nil {
		l.stats.rollupFailures.Add(1)
		return RollupResult{}, err
	}
	res, err := l.rollupRounds(ctx, counter)
	if err != nil {
		l.stats.rollupFailures.Add(1)
		l.noteFold(counter, time.Time{}, false)
		return res, err
	}
	l.noteFold(counter, res.Watermark, true)
	if res.Lag > l.cfg.maxLag {
		// Folded, but loud: the windows it found had waited past the limit.
		l.stats.stalled.Add(1)
		since := l.cfg.Now().Add(-res.Lag)
		return res, &RollupStalledError{Counter: counter, Since: since, Lag: res.Lag, MaxLag: l.cfg.maxLag,
			Expires: since.Add(l.cfg.logRetention)}
	}
	return res, nil
}

// rollupRounds folds counter, reading again after each race lost, a bounded number of times.
func (l *Log) rollupRounds(ctx context.Context, counter string) (RollupResult, error) {
	lag := time.Duration(-1)
	for round := range maxRollupRounds {
		res, done, err := l.rollupRound(ctx, counter, round > 0)
		if lag < 0 {
			lag = res.Lag // the first round's: what this call found
		}
		if err != nil || done {
			res.Lag = max(lag, 0)
			return res, err
		}
	}
	st, err := l.readRollup(ctx, counter, true)
	return RollupResult{Watermark: st.watermark, Total: st.total, Lag: max(lag, 0)}, err
}

// PlanRollup returns what Rollup would do now, and writes nothing: the watermark it would
// move to, the total there and the number of windows it would fold (0 when nothing is
// closed). It reads the row at the serial consistency, as Rollup does after a lost race, and
// judges windows by the cluster's clock as Rollup does (ErrClockOffset).
func (l *Log) PlanRollup(ctx context.Context, counter string) (RollupResult, error) {
	if err := l.checkCall(ctx); err != nil {
		return RollupResult{}, err
	}
	if err := ValidateCounter(counter); err != nil {
		return RollupResult{}, err
	}
	if err := l.checkClock(ctx); err != nil {
		return RollupResult{}, err
	}
	_, res, _, err := l.nextRollup(ctx, counter, true)
	return res, err
}

// nextRollup reads the rollup row (at the serial consistency if serial) and sums the closed
// windows after its watermark: the row read, the result a fold would write, and done when
// there is nothing to fold.
func (l *Log) nextRollup(ctx context.Context, counter string, serial bool) (rollupState, RollupResult, bool, error) {
	st, err := l.readRollup(ctx, counter, serial)
	if err != nil {
		return st, RollupResult{}, false, err
	}
	now := l.cfg.Now()
	h := l.horizon(counter, now)
	if st.marked && !st.watermark.Before(h) {
		return st, RollupResult{Watermark: st.watermark, Total: st.total, Lag: lagOf(now, st.watermark)}, true, nil
	}
	legacy, windows, err := l.listTail(ctx, counter, st, h)
	if err != nil {
		return st, RollupResult{}, false, err
	}
	lag := lagOf(now, oldestUnfolded(legacy, windows, h))
	h, legacy = l.capLegacy(now, h, legacy)
	if st.marked && !st.watermark.Before(h) {
		return st, RollupResult{Watermark: st.watermark, Total: st.total, Lag: lag}, true, nil
	}
	for len(windows) > 0 && !windows[len(windows)-1].start.Before(h) {
		windows = windows[:len(windows)-1] // after a capped horizon
	}
	sum, err := l.sum(ctx, counter, legacy, windows, now)
	if err != nil {
		return st, RollupResult{}, false, err
	}
	total, err := addChecked(st.total, sum)
	if err != nil {
		return st, RollupResult{}, false, fmt.Errorf("events: fold %q to %v: %w", counter, h, err)
	}
	return st, RollupResult{Watermark: h, Total: total, Folded: len(legacy) + len(windows), Lag: lag}, false, nil
}

// oldestUnfolded returns the start of the oldest bucket or window listed as not folded, or the
// horizon h when none is: a counter idle since its watermark has nothing waiting.
func oldestUnfolded(legacy []time.Time, windows []window, h time.Time) time.Time {
	oldest := h
	if len(legacy) > 0 && legacy[0].Before(oldest) {
		oldest = legacy[0]
	}
	if len(windows) > 0 && windows[0].start.Before(oldest) {
		oldest = windows[0].start
	}
	return oldest
}

// lagOf returns now less t, 0 for the zero time.
func lagOf(now, t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return max(now.Sub(t), 0)
}

// rollupRound makes one attempt, reading the row at the serial consistency if serial; done is
// false when another worker moved the watermark.
func (l *Log) rollupRound(ctx context.Context, counter string, serial bool) (RollupResult, bool, error) {
	st, res, done, err := l.nextRollup(ctx, counter, serial)
	if err != nil || done {
		return res, done, err
	}
	applied, err := l.moveWatermark(ctx, counter, st, res)
	if err != nil {
		return RollupResult{}, false, err
	}
	if applied {
		l.raiseFloor(counter, res.Watermark)
	}
	return res, applied, nil
}

// capLegacy keeps the watermark below the first first-layout bucket that is not closed by
// that layout's rules (or does not end before h), and returns the buckets to fold: a bucket
// is in the rollup exactly when it ends at or before the watermark.
func (l *Log) capLegacy(now, h time.Time, legacy []time.Time) (time.Time, []time.Time) {
	for i, b := range legacy {
		end := b.Add(l.cfg.legacyWidth)
		if end.After(h) || now.Before(end.Add(legacyClose)) {
			if b.Before(h) {
				h = b
			}
			return h, legacy[:i]
		}
	}
	return h, legacy
}

// rollupPatience bounds the serial reads that settle a watermark move whose outcome is unknown.
const rollupPatience = 2 * time.Second

// moveWatermark writes res conditionally on the row still holding st. An unknown outcome is
// settled by cas.Resolve: a watermark at or past res's is correct whoever wrote it, since every
// worker folding to the same horizon computes the same total; anything else did not apply, and
// the caller reads again.
func (l *Log) moveWatermark(ctx context.Context, counter string, st rollupState, res RollupResult) (bool, error) {
	now := l.cfg.Now().UTC()
	q := l.session.Query(l.q.insertRollup, counter, res.Watermark, res.Total, now)
	switch {
	case st.marked:
		q = l.session.Query(l.q.updateRollup, res.Watermark, res.Total, now, counter, st.watermark)
	case st.exists:
		q = l.session.Query(l.q.startRollup, res.Watermark, res.Total, now, counter)
	}
	reached := func(row cas.Row, found bool) bool {
		w, _ := row["watermark"].(time.Time)
		return found && !w.Before(res.Watermark)
	}
	applied, _, err := cas.Resolve(ctx, cas.Conditional{
		Op: "rollup", Write: q, Read: l.session.Query(l.q.readRollup, counter), Applied: reached,
		Patience: rollupPatience, Observe: observe.ObserveCAS(l.cfg.Observer, observe.Key{counter}),
	}, l.cfg.Consistency, l.cfg.Serial)
	if err != nil {
		return false, fmt.Errorf("events: move watermark of %q to %v: %w", counter, res.Watermark, err)
	}
	return applied, nil
}
