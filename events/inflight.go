package events

import (
	"context"
	"sync"
)

// flights is the set of deliveries running in this process. A delivery of an id that is already
// running here gets InProgress without a round trip: on the fast path the table holds no row for
// the id until the handler returns, so only this set keeps a redelivery from running it again.
type flights struct {
	mu  sync.Mutex
	set map[flightKey]chan struct{} // closed when the delivery ends
}

type flightKey struct {
	scope Scope
	id    string
}

// enter marks m as running. It returns false if it already is; otherwise the caller must call
// leave when the delivery ends.
func (f *flights) enter(m Message) bool {
	k := flightKey{m.Scope, m.ID}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.set[k]; busy {
		return false
	}
	if f.set == nil {
		f.set = map[flightKey]chan struct{}{}
	}
	f.set[k] = make(chan struct{})
	return true
}

func (f *flights) leave(m Message) {
	k := flightKey{m.Scope, m.ID}
	f.mu.Lock()
	done := f.set[k]
	delete(f.set, k)
	f.mu.Unlock()
	close(done)
}

// wait returns when every delivery of scope running at the call has ended, or ctx.Err().
func (f *flights) wait(ctx context.Context, scope Scope) error {
	f.mu.Lock()
	var running []chan struct{}
	for k, done := range f.set {
		if k.scope == scope {
			running = append(running, done)
		}
	}
	f.mu.Unlock()
	for _, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
