package outbox

import (
	"context"
	"sync"
	"time"
)

// publisherTurn lets one shard's worker call the publisher at a time (Publisher's contract)
// while a pass works several shards at once. A worker that waits for its turn is woken each
// time the publisher is released, and at least every interval, to renew what its pass holds:
// a stuck broker's calls, each up to the publish timeout, would otherwise outlast the leases of
// the shards queued behind them.
type publisherTurn struct {
	mu       sync.Mutex
	busy     bool
	released chan struct{} // closed when the current holder releases the publisher
}

// acquire waits for the publisher until it is free or ctx ends, calling waiting (if not nil)
// each time it was released to another worker and at least every interval; an error of
// waiting ends the wait with it.
func (p *publisherTurn) acquire(ctx context.Context, interval time.Duration, waiting func() error) error {
	for {
		p.mu.Lock()
		if !p.busy {
			p.busy, p.released = true, make(chan struct{})
			p.mu.Unlock()
			return nil
		}
		released := p.released
		p.mu.Unlock()
		t := time.NewTimer(interval)
		select {
		case <-released:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
		if waiting != nil {
			if err := waiting(); err != nil {
				return err
			}
		}
	}
}

// release frees the publisher and wakes the workers waiting for it.
func (p *publisherTurn) release() {
	p.mu.Lock()
	p.busy = false
	close(p.released)
	p.mu.Unlock()
}
