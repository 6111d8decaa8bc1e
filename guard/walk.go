package guard

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// walkParallel bounds the reads of one window's buckets that a walk runs at once.
const walkParallel = 16

// walkWindows yields the ids of every partition of a windowed table (list: a query by scope,
// window_start and bucket) of scope whose window holds a time in [from, to], in the group's
// layouts of those times: oldest window first, the buckets of one window read in parallel.
// yield gets each id with its window's start and end and is never called concurrently.
func (g *Guard) walkWindows(ctx context.Context, list string, scope Scope, from, to time.Time,
	yield func(id string, start, end time.Time) error) error {
	gl, err := g.layoutsOf(ctx, scope.Group, to, false)
	if err != nil {
		return err
	}
	for _, sp := range gl.spans(from.Unix(), to.Unix()) {
		for start := floorTo(sp.from, sp.window); start < sp.to; start += sp.window {
			s, e := time.Unix(start, 0).UTC(), time.Unix(start+sp.window, 0).UTC()
			err := g.readWindow(ctx, list, scope, start, sp.buckets, func(id string) error { return yield(id, s, e) })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// readWindow reads the buckets of one window, walkParallel at a time, and yields their ids one
// at a time.
func (g *Guard) readWindow(ctx context.Context, list string, scope Scope, start int64, buckets int, yield func(id string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex // serializes yield
	var wg sync.WaitGroup
	sem := make(chan struct{}, walkParallel)
	for bucket := range buckets {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			iter := g.session.Query(list, scope.Group, scope.Topic, scope.Partition, start, bucket).
				WithContext(ctx).Consistency(g.cfg.Consistency).PageSize(scopePageSize).Iter()
			var id string
			for iter.Scan(&id) {
				mu.Lock()
				err := error(nil)
				if ctx.Err() == nil {
					err = yield(id)
				}
				mu.Unlock()
				if err != nil {
					cancel(err)
					break
				}
			}
			if err := iter.Close(); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("guard: list window %d/%d of %v: %w", start, bucket, scope, err))
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx) // a read's error, yield's, or the caller's ctx's
}
