// Package parallel runs a bounded number of calls at once, in goroutines that the caller's call
// owns: every one has returned when ForEach returns. The event log's totals and rollups and the
// counters' repair listing share it.
package parallel

import (
	"context"
	"sync"
)

// ForEach calls fn(ctx, i) for every i in [0, n) on at most limit goroutines and returns the
// first error. Every goroutine it starts has returned when it returns; after an error, calls not
// yet started are skipped and the context of those running is cancelled.
func ForEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range min(limit, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
