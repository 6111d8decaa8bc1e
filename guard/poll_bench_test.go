package guard_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/testnode"
)

// BenchmarkCatchUpConsumer drains a backlog of 20,000 late messages (an hour old, four broker
// partitions, one worker each, polls of 500) through the guard into one event-log counter:
// "batch" with ProcessBatch and a handler that records each message's event (the per-event
// path), "poll" with ProcessPoll and one RecordBatch per poll. It reports messages per second.
// Run it once: -bench CatchUpConsumer -benchtime 1x.
func BenchmarkCatchUpConsumer(b *testing.B) {
	const backlog, parts, poll = 20_000, 4, 500
	ctx := context.Background()
	session, ks := testnode.NewSession(b)
	modes := []struct {
		name  string
		apply func(g *guard.Guard, l *events.Log, counter string, msgs []guard.Message) ([]guard.BatchResult, error)
	}{
		{"batch", func(g *guard.Guard, l *events.Log, counter string, msgs []guard.Message) ([]guard.BatchResult, error) {
			return g.ProcessBatch(ctx, msgs, func(ctx context.Context, m guard.Message) error {
				return l.Record(ctx, events.Event{Counter: counter, ID: m.ID, Delta: 1, Time: m.Time})
			})
		}},
		{"poll", func(g *guard.Guard, l *events.Log, counter string, msgs []guard.Message) ([]guard.BatchResult, error) {
			return g.ProcessPoll(ctx, msgs, func(ctx context.Context, msgs []guard.Message) []error {
				evs := make([]events.Event, len(msgs))
				for i, m := range msgs {
					evs[i] = events.Event{Counter: counter, ID: m.ID, Delta: 1, Time: m.Time}
				}
				if err := l.RecordBatch(ctx, evs); err != nil {
					errs := make([]error, len(msgs))
					for i := range errs {
						errs[i] = err
					}
					return errs
				}
				return nil
			})
		}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			for n := range b.N {
				g, err := guard.New(session, guard.WithKeyspace(ks))
				if err != nil {
					b.Fatal(err)
				}
				l, err := events.NewLog(session, events.WithKeyspace(ks))
				if err != nil {
					b.Fatal(err)
				}
				counter, topic := fmt.Sprintf("%s-%d", m.name, n), fmt.Sprintf("orders-%s-%d", m.name, n)
				at := time.Now().Add(-time.Hour)
				start := time.Now()
				var wg sync.WaitGroup
				errs := make([]error, parts)
				for p := range parts {
					wg.Go(func() {
						var msgs []guard.Message
						for i := p; i < backlog; i += parts {
							msgs = append(msgs, guard.Message{Scope: guard.Scope{Group: "billing", Topic: topic, Partition: int32(p)},
								ID: fmt.Sprint("m-", i), Time: at.Add(time.Duration(i) * time.Millisecond)})
						}
						for s := 0; s < len(msgs) && errs[p] == nil; s += poll {
							res, err := m.apply(g, l, counter, msgs[s:min(s+poll, len(msgs))])
							for _, r := range res {
								if r.Outcome != guard.Processed && err == nil {
									err = fmt.Errorf("%v: %w", r.Outcome, r.Err)
								}
							}
							errs[p] = err
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
				b.ReportMetric(float64(backlog)/took.Seconds(), "msgs/s")
				b.Logf("%s: %d late messages applied in %v: %.0f msgs/s, %d late Paxos rounds", m.name, backlog,
					took.Round(time.Millisecond), float64(backlog)/took.Seconds(), l.Stats().LateRounds)
			}
		})
	}
}
