package bloom

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for rotation tests.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *fakeClock) Set(t time.Time)         { c.ns.Store(t.UnixNano()) }

func TestNewRotatingRejectsBadSizing(t *testing.T) {
	cases := []struct {
		name string
		opts []RotatingOption
		want error
	}{
		{"zero retention", []RotatingOption{WithRetention(0)}, ErrInvalidRetention},
		{"negative retention", []RotatingOption{WithRetention(-time.Hour)}, ErrInvalidRetention},
		{"retention shorter than generations", []RotatingOption{WithRetention(3), WithGenerations(4)}, ErrInvalidRetention},
		{"zero generations", []RotatingOption{WithGenerations(0)}, ErrInvalidGenerations},
		{"too many generations", []RotatingOption{WithGenerations(65)}, ErrInvalidGenerations},
		{"nil clock", []RotatingOption{WithClock(nil)}, ErrInvalidOption},
		{"zero items", []RotatingOption{WithExpectedItems(0)}, ErrInvalidItems},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRotating(tc.opts...)
			if !errors.Is(err, tc.want) || r != nil {
				t.Fatalf("NewRotating: got (%v, %v), want error %v", r, err, tc.want)
			}
		})
	}
}

// TestRotatingAgesKeysOut checks both edges: a key is remembered for at least the retention,
// and forgotten once retention plus one window has passed.
func TestRotatingAgesKeysOut(t *testing.T) {
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(1000), WithRetention(4*time.Hour), WithGenerations(4), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	if r.Window() != time.Hour || r.Generations() != 5 {
		t.Fatalf("window %v generations %d", r.Window(), r.Generations())
	}
	clk.Advance(59 * time.Minute) // added at the very end of a window: the worst case
	for i := range 100 {
		r.Add(key(i))
	}
	clk.Advance(4*time.Hour - time.Nanosecond)
	for i := range 100 {
		if !r.Test(key(i)) {
			t.Fatalf("key %d forgotten before the retention", i)
		}
	}
	clk.Advance(time.Hour + 2*time.Nanosecond)
	for i := range 100 {
		if r.Test(key(i)) {
			t.Fatalf("key %d remembered past retention plus a window", i)
		}
	}
}

// TestRotatingRecordsSeenKeysAgain: a key found in an old generation is added to the current
// one, so it is remembered for a full retention after its latest check.
func TestRotatingRecordsSeenKeysAgain(t *testing.T) {
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(1000), WithRetention(4*time.Hour), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	r.Add("k")
	clk.Advance(3 * time.Hour)
	if !r.TestOrAdd("k") {
		t.Fatal("k not seen within the retention")
	}
	clk.Advance(3 * time.Hour)
	if !r.Test("k") {
		t.Fatal("k forgotten less than a retention after it was last checked")
	}
}

func TestRotatingAddAtPlacesKeysByAge(t *testing.T) {
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(1000), WithRetention(4*time.Hour), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Hour)
	now := clk.Now()
	if r.AddAt("expired", now.Add(-5*time.Hour-time.Nanosecond)) {
		t.Fatal("a key older than the retention plus a window was recorded")
	}
	if !r.AddAt("old", now.Add(-3*time.Hour)) || !r.AddAt("unknown", time.Time{}) {
		t.Fatal("a key within the retention was not recorded")
	}
	clk.Advance(time.Hour)
	if !r.Test("old") {
		t.Fatal("old forgotten before its retention")
	}
	clk.Advance(time.Hour)
	if r.Test("old") {
		t.Fatal("old kept past its retention plus a window: AddAt ignored its time")
	}
	if !r.Test("unknown") {
		t.Fatal("a key with an unknown time must be kept as if written now")
	}
}

// TestRotatingFalsePositiveRateAcrossRotations streams exactly the expected number of new keys
// per retention and measures the false-positive rate at the peak (just before a rotation, with
// every generation full) for several rotations. Deterministic keys and hash: no flakes.
func TestRotatingFalsePositiveRateAcrossRotations(t *testing.T) {
	const (
		items  = 100_000
		target = 0.01
		gens   = 4
		probes = 50_000
	)
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(items), WithFalsePositiveRate(target),
		WithRetention(4*time.Hour), WithGenerations(gens), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	perWindow := items / gens
	next := 0
	const neverAdded = 1 << 30 // probes come from a range no window ever adds
	for w := range 10 {
		for range perWindow {
			r.Add(key(next))
			next++
		}
		got := measureFP(r.Test, neverAdded+w*probes, probes)
		t.Logf("after %d rotations: measured %.5f, estimated %.5f, fill %.3f", w, got, r.EstimatedFalsePositiveRate(), r.Fill())
		if w >= gens { // from here on every live generation holds a full window: the peak
			if got > target*1.25 || got < target*0.5 {
				t.Fatalf("after %d rotations: measured %v, target %v", w, got, target)
			}
		}
		clk.Advance(time.Hour)
	}
	// The first window's keys have aged out: they now test present only as often as keys never
	// added.
	if got := measureFP(r.Test, 0, perWindow); got > target*1.25 {
		t.Fatalf("%.4f of the first window's keys still present after the retention", got)
	}
}

// TestAddAtWithStaleNow: a key written after the clock reading a warm-up batch uses, in a later
// window, must still be kept a full retention from its write.
func TestAddAtWithStaleNow(t *testing.T) {
	clk := newFakeClock()
	r, err := NewRotating(WithExpectedItems(1000), WithRetention(4*time.Hour), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	stale := clk.Now().Add(59 * time.Minute)
	clk.Advance(61 * time.Minute) // the key is written in the second window
	written := clk.Now()
	r.c.addAt("k", written.Add(time.Hour), stale) // a bucket end in the future
	clk.Set(written.Add(4*time.Hour - time.Nanosecond))
	if !r.Test("k") {
		t.Fatal("key forgotten before a retention had passed since its write")
	}
}
