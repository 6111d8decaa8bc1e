package bloom

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
)

// key is the deterministic key set every test and benchmark uses: shaped like a consumer
// guard's message key.
func key(i int) string { return fmt.Sprintf("orders-group/orders/17/msg-%09d", i) }

func TestNewRejectsBadSizing(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want error
	}{
		{"zero items", []Option{WithExpectedItems(0)}, ErrInvalidItems},
		{"too many items", []Option{WithExpectedItems(math.MaxUint64)}, ErrInvalidItems},
		{"fp zero", []Option{WithFalsePositiveRate(0)}, ErrInvalidFPRate},
		{"fp one", []Option{WithFalsePositiveRate(1)}, ErrInvalidFPRate},
		{"fp negative", []Option{WithFalsePositiveRate(-0.1)}, ErrInvalidFPRate},
		{"fp NaN", []Option{WithFalsePositiveRate(math.NaN())}, ErrInvalidFPRate},
		{"fp too small", []Option{WithFalsePositiveRate(1e-30)}, ErrInvalidFPRate},
		{"shards not power of two", []Option{WithShards(3)}, ErrInvalidShards},
		{"shards zero explicit", []Option{WithShards(-1)}, ErrInvalidShards},
		{"shards too many", []Option{WithShards(8192)}, ErrInvalidShards},
		{"nil option", []Option{nil}, ErrInvalidOption},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.opts...)
			if !errors.Is(err, tc.want) || f != nil {
				t.Fatalf("New: got (%v, %v), want error %v", f, err, tc.want)
			}
		})
	}
}

func TestFilterNoFalseNegatives(t *testing.T) {
	f, err := New(WithExpectedItems(10_000))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10_000 {
		f.Add(key(i))
	}
	for i := range 10_000 {
		if !f.Test(key(i)) {
			t.Fatalf("key %d added but Test is false", i)
		}
	}
	f.Reset()
	if f.Test(key(1)) || f.Fill() != 0 {
		t.Fatalf("after Reset: Test %v, Fill %v", f.Test(key(1)), f.Fill())
	}
}

// TestTestOrAddExactlyOneNew is the property the fast path depends on: of many goroutines
// racing on the same keys, exactly one learns that a key is new.
func TestTestOrAddExactlyOneNew(t *testing.T) {
	const keys, goroutines = 2000, 16
	f, err := New(WithExpectedItems(keys), WithShards(4))
	if err != nil {
		t.Fatal(err)
	}
	var news [keys]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range keys {
				j := (i + g*keys/goroutines) % keys // start at different keys so goroutines collide mid-run
				if !f.TestOrAdd(key(j)) {
					news[j].Add(1)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range news {
		n := int(news[i].Load())
		if n > 1 {
			t.Fatalf("key %d: %d goroutines were told it is new", i, n)
		}
		total += n
	}
	// A key can be told "seen" by every goroutine only through a false positive; at 1% over 2000
	// keys a handful are expected, never hundreds.
	if total < keys-keys/20 {
		t.Fatalf("only %d of %d keys were ever new", total, keys)
	}
}

// TestFilterFalsePositiveRateAtCapacity fills a filter to capacity and probes keys never added.
// Keys and hash are deterministic, so the measured rate is the same on every run.
func TestFilterFalsePositiveRateAtCapacity(t *testing.T) {
	for _, target := range []float64{0.01, 0.001} {
		const n = 200_000
		f, err := New(WithExpectedItems(n), WithFalsePositiveRate(target))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			f.Add(key(i))
		}
		got := measureFP(f.Test, n, 200_000)
		t.Logf("target %v: measured %.5f, estimated %.5f, fill %.3f, %.2f bytes/key",
			target, got, f.EstimatedFalsePositiveRate(), f.Fill(), float64(f.MemoryBytes())/n)
		if got > target*1.25 || got < target*0.5 {
			t.Fatalf("target %v: measured %v", target, got)
		}
	}
}

// measureFP probes keys [from, from+probes), none of which were added.
func measureFP(test func(string) bool, from, probes int) float64 {
	fp := 0
	for i := from; i < from+probes; i++ {
		if test(key(i)) {
			fp++
		}
	}
	return float64(fp) / float64(probes)
}
