package bloom

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	bbloom "github.com/bits-and-blooms/bloom/v3"
)

// mutexFilter is the baseline: one bits-and-blooms filter behind one lock.
type mutexFilter struct {
	mu sync.Mutex
	f  *bbloom.BloomFilter
}

func (m *mutexFilter) Test(k string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f.TestString(k)
}

func (m *mutexFilter) Add(k string) {
	m.mu.Lock()
	m.f.AddString(k)
	m.mu.Unlock()
}

type benchFilter interface {
	Test(string) bool
	Add(string)
}

const benchItems = 1 << 20

// benchKeys are made once: key formatting must not be part of ns/op.
var benchKeys = func() []string {
	k := make([]string, benchItems)
	for i := range k {
		k[i] = key(i)
	}
	return k
}()

func benchFilters(b *testing.B) []struct {
	name string
	new  func() benchFilter
} {
	return []struct {
		name string
		new  func() benchFilter
	}{
		{"mutex", func() benchFilter {
			return &mutexFilter{f: bbloom.NewWithEstimates(benchItems, DefaultFalsePositiveRate)}
		}},
		{"sharded", func() benchFilter {
			f, err := New(WithExpectedItems(benchItems))
			if err != nil {
				b.Fatal(err)
			}
			return f
		}},
		{"rotating", func() benchFilter {
			f, err := NewRotating(WithExpectedItems(benchItems))
			if err != nil {
				b.Fatal(err)
			}
			return f
		}},
	}
}

// BenchmarkFilter measures Test and Add on a filter holding half its capacity, single-threaded
// and from GOMAXPROCS goroutines, for the sharded filter and a mutex-wrapped bits-and-blooms
// filter in the same run.
func BenchmarkFilter(b *testing.B) {
	for _, fc := range benchFilters(b) {
		f := fc.new()
		for _, k := range benchKeys[:benchItems/2] {
			f.Add(k)
		}
		ops := []struct {
			name string
			op   func(string)
		}{
			{"Test", func(k string) { f.Test(k) }},
			{"Add", f.Add},
		}
		for _, o := range ops {
			b.Run(fc.name+"/"+o.name+"/serial", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					o.op(benchKeys[i&(benchItems-1)])
					i++
				}
			})
			b.Run(fc.name+"/"+o.name+"/parallel", func(b *testing.B) {
				b.ReportAllocs()
				var seed sync.Mutex
				next := 0
				b.RunParallel(func(pb *testing.PB) {
					seed.Lock()
					i := next * 7919 // each goroutine walks its own stretch of keys
					next++
					seed.Unlock()
					for pb.Next() {
						o.op(benchKeys[i&(benchItems-1)])
						i++
					}
				})
			})
		}
	}
}

// BenchmarkPreCheckCheck measures the whole pre-check on a warm PreCheck: the call lwt and the
// consumer guard make per operation.
func BenchmarkPreCheckCheck(b *testing.B) {
	p, err := NewPreCheck("bench", WithExpectedItems(benchItems))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.WarmUp(context.Background(), 1, benchSource(benchItems/2)); err != nil {
		b.Fatal(err)
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				p.Check(benchKeys[i&(benchItems-1)])
				i++
			}
		})
	})
}

// BenchmarkMemoryPerKey reports the bytes of filter per expected key at the default rate, for
// the plain filter and for rotating filters with several generation counts.
func BenchmarkMemoryPerKey(b *testing.B) {
	report := func(b *testing.B, bytes int64) {
		for b.Loop() {
		}
		b.ReportMetric(float64(bytes)/benchItems, "bytes/key")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("mutex", func(b *testing.B) {
		f := bbloom.NewWithEstimates(benchItems, DefaultFalsePositiveRate)
		report(b, int64(len(f.BitSet().Words()))*8)
	})
	b.Run("sharded", func(b *testing.B) {
		f, err := New(WithExpectedItems(benchItems))
		if err != nil {
			b.Fatal(err)
		}
		report(b, f.MemoryBytes())
	})
	for _, g := range []int{1, 2, 4, 8} {
		b.Run("rotating/generations="+strconv.Itoa(g), func(b *testing.B) {
			f, err := NewRotating(WithExpectedItems(benchItems), WithGenerations(g))
			if err != nil {
				b.Fatal(err)
			}
			report(b, f.MemoryBytes())
		})
	}
}

// BenchmarkFalsePositiveRate measures the false-positive rate at capacity against the target:
// for the plain filter, and for a rotating filter before any rotation and at its peak after
// several, with a steady stream of the expected keys per retention.
func BenchmarkFalsePositiveRate(b *testing.B) {
	const items, probes, target = 1 << 18, 1 << 17, DefaultFalsePositiveRate
	b.Run("sharded", func(b *testing.B) {
		var got float64
		for b.Loop() {
			f, err := New(WithExpectedItems(items))
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range benchKeys[:items] {
				f.Add(k)
			}
			got = measureFP(f.Test, benchItems, probes)
		}
		b.ReportMetric(got, "fp-measured")
		b.ReportMetric(target, "fp-target")
	})
	for _, rotations := range []int{0, 4, 8} {
		b.Run("rotating/rotations="+strconv.Itoa(rotations), func(b *testing.B) {
			var got float64
			for b.Loop() {
				got = rotatingPeakFP(b, items, probes, rotations)
			}
			b.ReportMetric(got, "fp-measured")
			b.ReportMetric(target, "fp-target")
		})
	}
}

// rotatingPeakFP streams items/4 new keys per window and measures the false-positive rate
// after the given number of rotations, at the end of that window.
func rotatingPeakFP(b *testing.B, items, probes, rotations int) float64 {
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(uint64(items)), WithGenerations(4), WithClock(clk.Now))
	if err != nil {
		b.Fatal(err)
	}
	perWindow, next := items/4, 0
	for w := 0; ; w++ {
		for range perWindow {
			r.Add(key(next))
			next++
		}
		if w == rotations {
			return measureFP(r.Test, 1<<30, probes)
		}
		clk.Advance(r.Window())
	}
}

// benchSource yields the first n bench keys, each with a write time as a bucketed table gives
// it (the end of its bucket; here, the time the source was made).
func benchSource(n int) KeySource {
	written := time.Now()
	return KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		for _, k := range benchKeys[:n] {
			if err := yield(k, written); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkWarmUp loads 1M keys from an in-memory source into a PreCheck sized for them and
// reports the time per warm-up and the memory it allocates (the filter is allocated when the
// PreCheck is built, so it is reported separately as filter-bytes).
func BenchmarkWarmUp(b *testing.B) {
	const n = 1_000_000
	p, err := NewPreCheck("bench", WithExpectedItems(n))
	if err != nil {
		b.Fatal(err)
	}
	src := benchSource(n)
	var epoch uint64
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		epoch++
		if err := p.WarmUp(context.Background(), epoch, src); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	s := p.Stats()
	b.ReportMetric(float64(s.WarmUpDuration.Milliseconds()), "ms/warmup")
	b.ReportMetric(float64(s.WarmUpKeys), "keys")
	b.ReportMetric(float64(s.MemoryBytes), "filter-bytes")
	b.ReportMetric(float64(after.HeapInuse)-float64(before.HeapInuse), "heap-growth-bytes")
}
