package bloom

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzNewRotating: any sizing either builds a filter or is one of the sizing errors; never a
// panic, never a filter that loses a key.
func FuzzNewRotating(f *testing.F) {
	f.Add(uint64(1000), 0.01, int64(time.Hour), 4, 0, "k")
	f.Add(uint64(0), 0.01, int64(time.Hour), 4, 0, "")
	f.Add(uint64(1), 0.5, int64(1), 1, 1, "\x00")
	f.Add(uint64(math.MaxUint64), 1e-9, int64(-1), 0, 3, "ключ")
	f.Add(uint64(10), math.Inf(1), int64(math.MaxInt64), 64, 4096, "a long key with spaces/and/slashes")
	f.Fuzz(func(t *testing.T, items uint64, fp float64, retention int64, gens, shards int, key string) {
		if items > 1<<22 {
			items %= 1 << 22 // keep allocations small; the bound itself is tested in TestNewRejectsBadSizing
		}
		clk := newFakeClock() // a stopped clock: with a 1ns retention the real one ages keys out at once
		r, err := NewRotating(WithExpectedItems(items), WithFalsePositiveRate(fp),
			WithRetention(time.Duration(retention)), WithGenerations(gens), WithShards(shards), WithClock(clk.Now))
		if err != nil {
			for _, want := range []error{ErrInvalidItems, ErrInvalidFPRate, ErrInvalidRetention, ErrInvalidGenerations, ErrInvalidShards} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if r.TestOrAdd(key) {
			t.Fatalf("key %q seen in an empty filter", key)
		}
		if !r.Test(key) || !r.TestOrAdd(key) {
			t.Fatalf("key %q lost", key)
		}
	})
}
