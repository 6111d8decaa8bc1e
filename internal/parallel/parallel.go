// Package parallel runs a bounded number of calls at once, in goroutines that the caller's call
// owns: every one has returned when ForEach returns. The event log's totals and rollups and the
// counters' repair listing share it.
package parallel

import (
	"context"
	"sync"
)

// ForEach calls fn(ctx, i) for every i in [0, n), at most limit at a time, and returns the
// first error. Every call has returned when forEach returns; after an error, calls not yet
// started are skipped and the context of those running is cancelled.
func ForEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		slots = make(chan struct{}, limit)
	)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
