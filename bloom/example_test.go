package bloom_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
)

func ExampleFilter() {
	f, err := bloom.New(bloom.WithExpectedItems(100_000), bloom.WithFalsePositiveRate(0.001))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.TestOrAdd("order-42")) // first time: not seen
	fmt.Println(f.TestOrAdd("order-42")) // second time: maybe seen
	// Output:
	// false
	// true
}

func ExampleRotating() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r, err := bloom.NewRotating(bloom.WithRetention(24*time.Hour), bloom.WithGenerations(4), bloom.WithClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	r.Add("order-42")
	now = now.Add(24 * time.Hour)
	fmt.Println(r.Test("order-42")) // within retention plus a window
	now = now.Add(6 * time.Hour)
	fmt.Println(r.Test("order-42")) // aged out with the table's rows
	// Output:
	// true
	// false
}

func ExamplePreCheck() {
	ctx := context.Background()
	p, err := bloom.NewPreCheck("orders-group/orders/17", bloom.WithExpectedItems(100_000))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Check("msg-1").Verdict) // cold: take the LWT

	// On partition assignment: warm from the table, under the new ownership epoch.
	processed := bloom.KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		return yield("msg-1", time.Now())
	})
	if err := p.WarmUp(ctx, 1, processed); err != nil {
		fmt.Println(err)
		return
	}
	a := p.Check("msg-2")
	fmt.Println(a.Verdict, a.Epoch) // fast path: a plain write carrying the epoch
	fmt.Println(p.Check("msg-1").Verdict)

	// The LWT for msg-1 finds it new after all: report the false positive.
	p.Observe(bloom.Answer{Verdict: bloom.MaybeSeen, Epoch: 1}, true)

	p.Invalidate() // on revocation: the fast path stops at once
	fmt.Println(p.Check("msg-3").Verdict)
	s := p.Stats()
	fmt.Println(s.Checks, s.ClearlyNew, s.MaybeSeen, s.NotWarm, s.FalsePositives, s.WarmUpKeys)
	// Output:
	// not warm
	// clearly new 1
	// maybe seen
	// not warm
	// 4 1 1 2 1 1
}
