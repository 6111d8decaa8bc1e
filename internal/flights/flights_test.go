package flights

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestEnterCountsCallsOfAKey(t *testing.T) {
	var s Set[string, string]
	if running, _ := s.Enter("k", "a"); running {
		t.Fatal("first call reported as running")
	}
	running, done := s.Enter("k", "a")
	if !running {
		t.Fatal("second call not reported as running")
	}
	s.Leave("k")
	select {
	case <-done:
		t.Fatal("done closed while a call is still running")
	default:
	}
	s.Leave("k")
	select {
	case <-done:
	default:
		t.Fatal("done not closed after the last call left")
	}
	if running, _ := s.Enter("k", "a"); running {
		t.Fatal("a key that ended is still running")
	}
}

func TestWaitCoversOnlyItsScopeAndHonoursCtx(t *testing.T) {
	var s Set[string, string]
	s.Enter("in-a", "a")
	s.Enter("in-b", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Wait(ctx, "a"); err != context.DeadlineExceeded {
		t.Fatalf("Wait with a running call of the scope = %v, want the ctx error", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(10 * time.Millisecond)
		s.Leave("in-a")
	}()
	if err := s.Wait(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// scope b's call is still running, and does not hold up scope a.
	if err := s.Wait(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentEntersOfOneKeySeeOneFirst(t *testing.T) {
	var s Set[int, int]
	const n = 64
	var wg sync.WaitGroup
	firsts := make(chan struct{}, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if running, _ := s.Enter(1, 0); !running {
				firsts <- struct{}{}
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(firsts) != 1 {
		t.Fatalf("%d calls saw the key free, want 1", len(firsts))
	}
}
