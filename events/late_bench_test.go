package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkRecordLate compares, in one run, what Record costs on the on-time path (one plain
// write), for a new late event (two reads, one LWT, one write) and for a retry of a late event
// whose claim's window is still open (two reads, one rejected LWT, one write). It prints
// each case's time per record; their ratios to "on-time" are the figures to quote.
func BenchmarkRecordLate(b *testing.B) {
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	l := newLog(b, clock)
	if err := l.Record(ctx, events.Event{Counter: "warm", ID: "w", Delta: 1, Time: clock.Now()}); err != nil {
		b.Fatal(err) // the counter's start and the window's index are written once, outside the loops
	}
	cases := []struct {
		name string
		at   time.Time
		id   func(i int) string
	}{
		{"on-time", clock.Now(), func(i int) string { return fmt.Sprint("now-", i) }},
		{"late-new", t0, func(i int) string { return fmt.Sprint("late-", i) }},
		{"late-retry", t0, func(i int) string { return "late-0" }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := l.Record(ctx, events.Event{Counter: "warm", ID: c.id(i), Delta: 1, Time: c.at}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
