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

// BenchmarkLateCatchUp applies a backlog of 20,000 late events of one counter (an hour old,
// 1,000 per second of event time, as a consumer finds them after an outage) from four
// workers (four broker partitions) in polls of 500, once per event with Record and once per
// poll with RecordBatch, on a fresh counter each, and reports the events per second and the
// Paxos rounds per event of each. Run it once: -bench LateCatchUp -benchtime 1x.
func BenchmarkLateCatchUp(b *testing.B) {
	const backlog, workers, poll = 20_000, 4, 500
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	modes := []struct {
		name  string
		apply func(l *events.Log, evs []events.Event) error
	}{
		{"record", func(l *events.Log, evs []events.Event) error {
			for _, e := range evs {
				if err := l.Record(ctx, e); err != nil {
					return err
				}
			}
			return nil
		}},
		{"batch", func(l *events.Log, evs []events.Event) error { return l.RecordBatch(ctx, evs) }},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			for n := range b.N {
				l := newLog(b, clock)
				counter := fmt.Sprintf("catchup-%s-%d", m.name, n)
				evs := make([]events.Event, backlog)
				for i := range evs {
					evs[i] = events.Event{Counter: counter, ID: fmt.Sprint("e-", i), Delta: 1, Time: t0.Add(time.Duration(i) * time.Millisecond)}
				}
				start := time.Now()
				var wg sync.WaitGroup
				errs := make([]error, workers)
				for w := range workers {
					wg.Go(func() {
						var mine []events.Event
						for i := w; i < backlog; i += workers { // a partition's share, in order
							mine = append(mine, evs[i])
						}
						for s := 0; s < len(mine) && errs[w] == nil; s += poll {
							errs[w] = m.apply(l, mine[s:min(s+poll, len(mine))])
						}
					})
				}
				wg.Wait()
				took := time.Since(start)
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				if got, err := l.Total(ctx, counter); err != nil || got != backlog {
					b.Fatalf("total %d, %v; want %d", got, err, backlog)
				}
				st := l.Stats()
				b.ReportMetric(float64(backlog)/took.Seconds(), "events/s")
				b.ReportMetric(float64(st.LateRounds)/backlog, "rounds/event")
				b.Logf("%s: %d late events in %v: %.0f events/s, %d Paxos rounds", m.name, backlog, took.Round(time.Millisecond),
					float64(backlog)/took.Seconds(), st.LateRounds)
			}
		})
	}
}
