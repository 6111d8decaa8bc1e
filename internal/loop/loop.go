// Package loop runs a function on a ticker in a goroutine that its caller owns and stops: the
// lease renewals of single and batched claims share it. It is safe for concurrent use.
package loop

import (
	"context"
	"sync"
	"time"
)

// Every calls tick every d in a goroutine of its own until tick returns false or stop is
// called. stop ends the goroutine and waits for it, so nothing tick touches is used after stop
// returns; calling it again is harmless.
func Every(d time.Duration, tick func() (again bool)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if !tick() {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// Sleep waits d, or until ctx ends and then returns ctx.Err(): the backoffs of the stores'
// retries and the late path's waits share it.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
