package leakcheck

import (
	"strings"
	"testing"
	"time"
)

// A goroutine that ends within the wait is not a leak, however late it ends, but one that
// outlived goleak's own wait is named as late; one still running when the wait is over is
// reported by the function it runs.
func TestFindWaitsForGoroutinesThatEnd(t *testing.T) {
	if late, err := find(time.Second, DriverGoroutines()...); late != nil || err != nil {
		t.Fatalf("with no goroutine of the test's running: late %v, err %v", late, err)
	}

	ends := make(chan struct{})
	go blockUntil(ends)
	time.AfterFunc(time.Second, func() { close(ends) }) // past goleak's own wait of under half a second
	late, err := find(5*time.Second, DriverGoroutines()...)
	if err != nil {
		t.Fatalf("a goroutine that ended within the wait was reported: %v", err)
	}
	if late == nil || !strings.Contains(late.Error(), "leakcheck.blockUntil") {
		t.Fatalf("a goroutine that ended after goleak's own wait is not named as late: %v", late)
	}

	stuck := make(chan struct{})
	defer close(stuck)
	go blockUntil(stuck)
	start := time.Now()
	_, err = find(time.Second, DriverGoroutines()...)
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
