package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// rollupConcurrency bounds the counters one pass of RunRollups or RollupEvery folds at once.
const rollupConcurrency = 4

// RollupEvery calls Rollup for each counter every interval until ctx is done, and then
// returns ctx.Err(). It runs in the caller's goroutine. A failed Rollup is retried at the
// next tick; onError, if not nil, is told about it.
func (l *Log) RollupEvery(ctx context.Context, interval time.Duration, onError func(counter string, err error), counters ...string) error {
	return l.rollupLoop(ctx, interval, onError, func() []string { return counters }, nil)
}

// RunRollups folds, every interval, every counter this Log recorded an event for, until each
// of them is folded past the last window the Log wrote, and returns ctx.Err() when ctx is
// done. It runs in the caller's goroutine (up to four rollups at a time); run it in every
// process that records events, beside any number of other rollers: Rollup is exactly once
// whoever runs it. A window is folded at most Lag(interval) after it starts, so a total lists
// about that much of each counter's windows. A failed Rollup is retried at the next tick;
// onError, if not nil, is told about it. A counter whose writer stopped before its windows were
// folded stays exact and is folded by the next Rollup of it from any process (RollupEvery, or
// RunRollups in a process that records it again).
func (l *Log) RunRollups(ctx context.Context, interval time.Duration, onError func(counter string, err error)) error {
	return l.rollupLoop(ctx, interval, onError, l.activeCounters, l.folded)
}

func (l *Log) rollupLoop(ctx context.Context, interval time.Duration, onError func(string, error),
	counters func() []string, folded func(string, RollupResult)) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if interval <= 0 {
		return fmt.Errorf("%w: rollup interval %v must be positive", ErrInvalidOption, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cs := counters()
		_ = parallel.ForEach(ctx, len(cs), rollupConcurrency, func(ctx context.Context, i int) error {
			res, err := l.Rollup(ctx, cs[i])
			switch {
			case err != nil && onError != nil && ctx.Err() == nil:
				onError(cs[i], err)
			case err == nil && folded != nil:
				folded(cs[i], res)
			}
			return nil // one counter's failure never stops the others
		})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// activeCounters returns the counters recorded by this Log and not yet folded past their last
// window.
func (l *Log) activeCounters() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.active))
	for c := range l.active {
		out = append(out, c)
	}
	return out
}

// folded forgets a counter once the watermark passed the last window this Log wrote to it.
func (l *Log) folded(counter string, res RollupResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.active[counter]; ok && last.Before(res.Watermark) {
		delete(l.active, counter)
	}
}
