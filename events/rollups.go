package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// RollupEvery calls Rollup for each counter every interval until ctx is done, and then
// returns ctx.Err(). It runs in the caller's goroutine. A failed Rollup is retried at the
// next tick; onError, if not nil, and the Log's logger (WithLogger) are told about it. A
// stalled rollup ends it, after the pass, with an error matching ErrRollupStalled: a counter
// found further behind than WithMaxRollupLag, or whose rollups have failed for longer than that.
func (l *Log) RollupEvery(ctx context.Context, interval time.Duration, onError func(counter string, err error), counters ...string) error {
	return l.rollupLoop(ctx, interval, onError, func(context.Context) []string { return counters }, nil)
}

// RunRollups folds, every interval, every counter this Log recorded an event for, until each
// of them is folded past the last window the Log wrote, and returns ctx.Err() when ctx is
// done. A pass folds only the counters with a window that closed since their last fold (so its
// work follows the windows that closed, not the counters), up to WithRollupConcurrency at a
// time. It runs in the caller's goroutine; run it in every
// process that records events, beside any number of other rollers: Rollup is exactly once
// whoever runs it. A window is folded at most Lag(interval) after it starts, so a total lists
// about that much of each counter's windows. A failed Rollup is retried at the next tick;
// onError, if not nil, and the Log's logger (WithLogger) are told about it. A stalled rollup
// ends it, after the pass, with an error matching ErrRollupStalled (a *RollupStalledError): a
// counter found further behind than WithMaxRollupLag, or whose rollups have failed for longer
// than that. Its windows' rows expire a retention after they were written, folded or not, so
// restart it (or page someone) rather than let a process run on without rollups. A counter whose writer stopped before its windows were
// folded stays exact and is folded by the next Rollup of it from any process (RollupEvery, or
// RunRollups in a process that records it again).
func (l *Log) RunRollups(ctx context.Context, interval time.Duration, onError func(counter string, err error)) error {
	return l.rollupLoop(ctx, interval, onError, l.dueCounters, l.folded)
}

func (l *Log) rollupLoop(ctx context.Context, interval time.Duration, onError func(string, error),
	counters func(context.Context) []string, folded func(string, RollupResult)) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("%w: rollup interval %v must be positive", ErrInvalidOption, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := l.rollPass(ctx, counters(ctx), onError, folded); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// rollPass folds each counter once, up to WithRollupConcurrency at a time. One counter's failure
// never stops the others; it returns the first stall found (see WithMaxRollupLag), after the
// pass, so that the folds that can be made are made.
func (l *Log) rollPass(ctx context.Context, cs []string, onError func(string, error), folded func(string, RollupResult)) error {
	var mu sync.Mutex
	var stall error
	_ = parallel.ForEach(ctx, len(cs), l.cfg.rollupConcurrency, func(ctx context.Context, i int) error {
		res, err := l.Rollup(ctx, cs[i])
		if err != nil && ctx.Err() != nil {
			return nil // the caller stopped the loop
		}
		if err != nil && !errors.Is(err, ErrRollupStalled) {
			if s := l.stallOf(cs[i], l.cfg.Now()); s != nil {
				l.stats.stalled.Add(1)
				err = fmt.Errorf("%w (last failure: %w)", s, err)
			}
		}
		if err != nil {
			l.report(ctx, cs[i], err)
			if onError != nil {
				onError(cs[i], err)
			}
		}
		if errors.Is(err, ErrRollupStalled) {
			mu.Lock()
			stall = cmp.Or(stall, err)
			mu.Unlock()
		}
		if folded != nil && !res.Watermark.IsZero() {
			folded(cs[i], res)
		}
		return nil
	})
	return stall
}

// dueCounters returns the counters recorded by this Log, not yet folded past their last window,
// that may have a window closed since their last fold: the oldest time the Log knows unfolded
// (see noteFold) is before the horizon, or nothing is known. The horizon is the cluster's
// time's; while that is not known well enough every counter is due, so that each Rollup refuses
// (ErrClockOffset) and is reported rather than skipped without a word.
func (l *Log) dueCounters(ctx context.Context) []string {
	known := l.checkClock(ctx) == nil
	now := l.cfg.Now()
	l.mu.Lock()
	cs := make([]string, 0, len(l.active))
	for c := range l.active {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	hs := make([]time.Time, len(cs)) // each counter's horizon, by its widths (their own lock)
	for i, c := range cs {
		hs[i] = l.horizon(c, now)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(cs))
	for i, c := range cs {
		if since, seen := l.behind[c]; !known || !seen || since.Before(hs[i]) {
			out = append(out, c)
		}
	}
	return out
}

// folded forgets a counter once the watermark passed the last window this Log wrote to it.
func (l *Log) folded(counter string, res RollupResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.active[counter]; ok && last.Before(res.Watermark) {
		delete(l.active, counter)
		l.forgetLag(counter)
	}
}
