package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEachBoundsCallsAndReturnsTheFirstError(t *testing.T) {
	var running, most, calls atomic.Int64
	err := ForEach(context.Background(), 100, 4, func(ctx context.Context, i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		calls.Add(1)
		return nil
	})
	if err != nil || calls.Load() != 100 || most.Load() > 4 {
		t.Fatalf("err %v, %d calls, %d at once", err, calls.Load(), most.Load())
	}
	boom := errors.New("boom")
	err = ForEach(context.Background(), 100, 4, func(ctx context.Context, i int) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ForEach(ctx, 5, 2, func(context.Context, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
}
