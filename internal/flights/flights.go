// Package flights tracks the calls running in this process, per key and grouped by scope. A fast
// path that records a key only after its work is done needs it twice: to answer a second call
// of a key that the table cannot show yet, and to let a new owner of a scope wait for the calls
// that began before it took the scope. A Set is safe for concurrent use.
package flights

import (
	"context"
	"sync"
)

// Set is the set of running calls, keyed by K, each belonging to a scope S. The zero value is
// ready to use.
type Set[K, S comparable] struct {
	mu sync.Mutex
	m  map[K]*flight[S]
}

type flight[S comparable] struct {
	scope S
	n     int           // calls of the key running
	done  chan struct{} // closed when the last of them leaves
}

// Enter registers a call of k in scope. running reports that another call of k was registered
// already; done is closed when the last call of k leaves. Every Enter needs one Leave.
func (s *Set[K, S]) Enter(k K, scope S) (running bool, done <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[k]
	if f == nil {
		if s.m == nil {
			s.m = map[K]*flight[S]{}
		}
		f = &flight[S]{scope: scope, done: make(chan struct{})}
		s.m[k] = f
	}
	f.n++
	return f.n > 1, f.done
}

// Leave ends a call registered by Enter.
func (s *Set[K, S]) Leave(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[k]
	if f.n--; f.n == 0 {
		delete(s.m, k)
		close(f.done)
	}
}

// Wait returns when every call of scope running at the time of the call has left, or with
// ctx.Err() unchanged.
func (s *Set[K, S]) Wait(ctx context.Context, scope S) error {
	s.mu.Lock()
	var running []chan struct{}
	for _, f := range s.m {
		if f.scope == scope {
			running = append(running, f.done)
		}
	}
	s.mu.Unlock()
	for _, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
