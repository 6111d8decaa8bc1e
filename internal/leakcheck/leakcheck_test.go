package leakcheck

import (
	"strings"
	"testing"
	"time"
)

// A goroutine that ends within the wait is not a leak, however late it ends; one that is still
// running when the wait is over is reported by the function it runs.
func TestFindWaitsForGoroutinesThatEnd(t *testing.T) {
	late := make(chan struct{})
	go func() { <-late }()
	time.AfterFunc(300*time.Millisecond, func() { close(late) })
	if err := find(5*time.Second, driverGoroutines()...); err != nil {
		t.Fatalf("a goroutine that ended within the wait was reported: %v", err)
	}

	stuck := make(chan struct{})
	defer close(stuck)
	go blockUntil(stuck)
	start := time.Now()
	err := find(time.Second, driverGoroutines()...)
	if err == nil {
		t.Fatal("a goroutine still running after the wait was not reported")
	}
	if !strings.Contains(err.Error(), "leakcheck.blockUntil") {
		t.Fatalf("the report does not name the goroutine's function: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("reported after %v, before the wait of 1s was over", waited)
	}
}

func blockUntil(c chan struct{}) { <-c }
