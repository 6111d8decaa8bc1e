package bloom

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sliceSource yields keys [0, n) as written at the given time.
func sliceSource(n int, written time.Time) KeySource {
	return KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		for i := range n {
			if err := yield(key(i), written); err != nil {
				return err
			}
		}
		return nil
	})
}

func newWarm(t *testing.T, keys int, opts ...PreCheckOption) *PreCheck {
	t.Helper()
	p, err := NewPreCheck("orders-group/orders/17", append([]PreCheckOption{WithExpectedItems(10_000)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WarmUp(context.Background(), 1, sliceSource(keys, time.Time{})); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPreCheckRejectsBadInput(t *testing.T) {
	if _, err := NewPreCheck(""); !errors.Is(err, ErrInvalidScope) {
		t.Fatalf("empty scope: %v", err)
	}
	if _, err := NewPreCheck("s", WithWarmUpLimit(0)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("zero warm-up limit: %v", err)
	}
	if _, err := NewPreCheck("s", WithFalsePositiveRate(2)); !errors.Is(err, ErrInvalidFPRate) {
		t.Fatalf("fp 2: %v", err)
	}
}

func TestColdPreCheckNeverSaysClearlyNew(t *testing.T) {
	p, err := NewPreCheck("s")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if a := p.Check(key(i)); a.Verdict != NotWarm {
			t.Fatalf("cold PreCheck answered %v", a.Verdict)
		}
	}
	if s := p.Stats(); s.Checks != 1000 || s.NotWarm != 1000 || s.State != Cold {
		t.Fatalf("stats %+v", s)
	}
}

func TestWarmPreCheckAnswers(t *testing.T) {
	p := newWarm(t, 1000)
	if st, e := p.State(); st != Warm || e != 1 || !p.Owns(1) || p.Owns(2) {
		t.Fatalf("state %v epoch %d", st, e)
	}
	for i := range 1000 {
		if a := p.Check(key(i)); a.Verdict != MaybeSeen {
			t.Fatalf("warmed key %d answered %v", i, a.Verdict)
		}
	}
	a := p.Check("brand-new")
	if !a.ClearlyNew() || a.Epoch != 1 {
		t.Fatalf("new key answered %+v", a)
	}
	if b := p.Check("brand-new"); b.Verdict != MaybeSeen {
		t.Fatalf("second check of a new key answered %v", b.Verdict)
	}
	p.Observe(Answer{Verdict: MaybeSeen, Epoch: 1}, true)
	p.Observe(Answer{Verdict: MaybeSeen, Epoch: 1}, false)
	p.Observe(a, true) // not a MaybeSeen answer: ignored
	s := p.Stats()
	if s.ClearlyNew != 1 || s.MaybeSeen != 1001 || s.Observed != 2 || s.FalsePositives != 1 ||
		s.WarmUps != 1 || s.WarmUpKeys != 1000 || s.WarmUpDuration <= 0 || s.MemoryBytes <= 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestCheckExactlyOneClearlyNew: many goroutines checking the same keys get at most one
// ClearlyNew per key, so at most one of them takes the fast path.
func TestCheckExactlyOneClearlyNew(t *testing.T) {
	const keys, goroutines = 2000, 16
	p := newWarm(t, 0, WithShards(4))
	var news [keys]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range keys {
				j := (i + g*keys/goroutines) % keys
				if p.Check(key(j)).ClearlyNew() {
					news[j].Add(1)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range news {
		if n := news[i].Load(); n > 1 {
			t.Fatalf("key %d: %d ClearlyNew answers", i, n)
		}
		total += int(news[i].Load())
	}
	if total < keys-keys/20 {
		t.Fatalf("only %d of %d keys were ever clearly new", total, keys)
	}
	if s := p.Stats(); s.Checks != keys*goroutines || s.ClearlyNew != uint64(total) {
		t.Fatalf("stats %+v, %d clearly new", s, total)
	}
}

func TestInvalidateStopsTheFastPath(t *testing.T) {
	p := newWarm(t, 10)
	p.Invalidate()
	if a := p.Check("new"); a.Verdict != NotWarm || p.Owns(1) {
		t.Fatalf("after Invalidate: %+v, owns %v", a, p.Owns(1))
	}
	if err := p.WarmUp(context.Background(), 1, sliceSource(10, time.Time{})); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("re-warm at the same epoch: %v", err)
	}
	if err := p.WarmUp(context.Background(), 2, sliceSource(10, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if a := p.Check("new"); !a.ClearlyNew() || a.Epoch != 2 || p.Owns(1) || !p.Owns(2) {
		t.Fatalf("after re-warm at epoch 2: %+v", a)
	}
}

// TestEpochChangeDuringCheckStopsTheFastPath races Check against ownership changes: a Check
// that starts after Invalidate(epoch e) has returned must never be told ClearlyNew under e.
func TestEpochChangeDuringCheckStopsTheFastPath(t *testing.T) {
	p := newWarm(t, 0)
	var invalidated atomic.Uint64 // the last epoch whose Invalidate has returned
	var stop atomic.Bool
	var bad, fast atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				before := invalidated.Load()
				if a := p.Check(key(g<<24 | i)); a.ClearlyNew() {
					fast.Add(1)
					if a.Epoch <= before {
						bad.Add(1)
					}
				}
			}
		})
	}
	for e := uint64(2); e < 200; e++ {
		p.Invalidate()
		invalidated.Store(e - 1)
		if err := p.WarmUp(context.Background(), e, sliceSource(100, time.Time{})); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond) // let the workers see each warm epoch
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 || fast.Load() == 0 {
		t.Fatalf("%d of %d ClearlyNew answers came under an epoch already invalidated", bad.Load(), fast.Load())
	}
}

// TestKeysCheckedWhileWarmingAreKept: a key processed through the LWT path during warm-up may
// be missed by the source; the PreCheck must still remember it.
func TestKeysCheckedWhileWarmingAreKept(t *testing.T) {
	p, err := NewPreCheck("s", WithExpectedItems(1000))
	if err != nil {
		t.Fatal(err)
	}
	src := KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		if a := p.Check("during"); a.Verdict != NotWarm {
			t.Errorf("Check while warming answered %v", a.Verdict)
		}
		return yield("loaded", time.Time{})
	})
	if err := p.WarmUp(context.Background(), 1, src); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"during", "loaded"} {
		if a := p.Check(k); a.Verdict != MaybeSeen {
			t.Fatalf("%s answered %v after warm-up", k, a.Verdict)
		}
	}
}

func TestWarmUpFailuresLeaveItCold(t *testing.T) {
	boom := errors.New("read failed")
	cases := []struct {
		name string
		src  KeySource
		ctx  func() context.Context
		want error
	}{
		{"source error", KeySource(func(context.Context, func(string, time.Time) error) error { return boom }), context.Background, boom},
		{"over the limit", sliceSource(101, time.Time{}), context.Background, ErrWarmUpLimit},
		{"cancelled", sliceSource(10, time.Time{}), func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPreCheck("s", WithExpectedItems(1000), WithWarmUpLimit(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WarmUp(tc.ctx(), 1, tc.src); !errors.Is(err, tc.want) {
				t.Fatalf("WarmUp: %v, want %v", err, tc.want)
			}
			if st, _ := p.State(); st != Cold || p.Check("new").Verdict != NotWarm {
				t.Fatalf("state %v after a failed warm-up", st)
			}
		})
	}
}

func TestInvalidateDuringWarmUp(t *testing.T) {
	p, err := NewPreCheck("s", WithExpectedItems(10_000))
	if err != nil {
		t.Fatal(err)
	}
	src := KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		for i := range 5000 {
			if i == 10 {
				p.Invalidate()
			}
			if err := yield(key(i), time.Time{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := p.WarmUp(context.Background(), 1, src); !errors.Is(err, ErrOwnershipChanged) {
		t.Fatalf("WarmUp: %v", err)
	}
	if st, _ := p.State(); st != Cold {
		t.Fatalf("state %v", st)
	}
}

func TestWarmUpSkipsExpiredKeys(t *testing.T) {
	clk := newFakeClock()
	p, err := NewPreCheck("s", WithExpectedItems(1000), WithRetention(4*time.Hour), WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(24 * time.Hour)
	src := KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		if err := yield("expired", clk.Now().Add(-6*time.Hour)); err != nil {
			return err
		}
		return yield("recent", clk.Now().Add(-time.Hour))
	})
	if err := p.WarmUp(context.Background(), 1, src); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.WarmUpKeys != 1 || s.WarmUpSkipped != 1 {
		t.Fatalf("stats %+v", s)
	}
	if !p.Check("expired").ClearlyNew() || p.Check("recent").ClearlyNew() {
		t.Fatal("expired key remembered, or recent key forgotten")
	}
}
