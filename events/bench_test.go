package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkTotal reads a counter with 1 day and with 30 days of hourly history, rolled up, plus
// the open buckets of the last hours. The read costs the rollup row and the open buckets, so
// the two cases should take about the same time.
func BenchmarkTotal(b *testing.B) {
	ctx := context.Background()
	end := t0.Add(60 * 24 * time.Hour)
	clock := testnode.NewClock(end)
	l := newLog(b, clock)
	const perBucket = 4
	for _, days := range []int{1, 30} {
		counter := fmt.Sprintf("history-%dd", days)
		start := end.Add(-time.Duration(days) * 24 * time.Hour)
		var want int64
		for at := start; at.Before(end); at = at.Add(time.Hour) {
			clock.Set(at.Add(time.Minute))
			if err := recordBucket(ctx, l, counter, at, perBucket); err != nil {
				b.Fatal(err)
			}
			want += perBucket
		}
		clock.Set(end)
		if _, err := l.Rollup(ctx, counter); err != nil {
			b.Fatal(err)
		}
		if got, err := l.Total(ctx, counter); err != nil || got != want {
			b.Fatalf("%s: total %d, %v; want %d", counter, got, err, want)
		}
	}
	for _, days := range []int{1, 30} {
		counter := fmt.Sprintf("history-%dd", days)
		b.Run(fmt.Sprintf("history=%dd", days), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Total(ctx, counter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// recordBucket records n events in the bucket starting at at, concurrently.
func recordBucket(ctx context.Context, l *events.Log, counter string, at time.Time, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("%d-%d", at.Unix(), i)
			errs <- l.Record(ctx, events.Event{Counter: counter, ID: id, Delta: 1, Time: at.Add(time.Duration(i) * time.Second)})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
