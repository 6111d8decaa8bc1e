// Command consumer plays an at-least-once broker that redelivers messages — some twice, some
// to two consumers at once, some after the handler failed — and shows that the consumer guard of
// package events applies each payment exactly once.
//
//	go run ./examples/consumer -hosts 127.0.0.1:9042
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
	"github.com/cassdedup/cassdedup/guard"
)

func main() { exampledb.Print("consumer", run) }

// summary is what run reports, so the test can check it.
type summary struct {
	deliveries, applied, acked, redeliveries int64
}

// run delivers 200 payments three times each over two consumers; every 10th payment's handler
// fails on its first run, so the broker has to redeliver it.
func run(ctx context.Context, session *gocql.Session, keyspace string, out io.Writer) (summary, error) {
	g, err := guard.New(session, guard.WithKeyspace(keyspace), guard.WithMaxAttempts(3))
	if err != nil {
		return summary{}, err
	}
	scope := guard.Scope{Group: "billing", Topic: fmt.Sprintf("payments-%d", time.Now().UnixNano()), Partition: 0}
	var (
		s        summary
		failOnce sync.Map // ids whose handler already failed once
		applied  sync.Map // the side effect: id -> times applied
	)
	handler := func(ctx context.Context, m guard.Message) error {
		if n := idNumber(m.ID); n%10 == 0 {
			if _, failed := failOnce.LoadOrStore(m.ID, true); !failed {
				return errors.New("card network timeout") // retryable: leave it for redelivery
			}
		}
		v, _ := applied.LoadOrStore(m.ID, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		return nil
	}

	queue := make(chan guard.Message, 1000)
	for round := 0; round < 3; round++ { // every message delivered three times
		for i := 0; i < 200; i++ {
			queue <- guard.Message{Scope: scope, ID: fmt.Sprintf("pay-%d", i), Payload: []byte(`{"amount":100}`)}
		}
	}
	close(queue)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for consumer := 0; consumer < 2; consumer++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range queue {
				atomic.AddInt64(&s.deliveries, 1)
				again, err := deliver(ctx, g, m, handler)
				atomic.AddInt64(&s.redeliveries, int64(again))
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				atomic.AddInt64(&s.acked, 1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return s, firstErr
	}
	applied.Range(func(_, v any) bool {
		s.applied += v.(*atomic.Int64).Load()
		return true
	})
	fmt.Fprintf(out, "deliveries %d, redelivered after a failure or while in progress %d, acknowledged %d, payments applied %d of 200\n",
		s.deliveries, s.redeliveries, s.acked, s.applied)
	return s, nil
}

// deliver is what a consumer loop does with one delivery: process it through the guard, and
// when the guard says to leave it for later, do what the broker would do — deliver it again.
// It returns how many times it had to deliver again.
func deliver(ctx context.Context, g *guard.Guard, m guard.Message, h guard.Handler) (again int, err error) {
	for ; ; again++ {
		outcome, err := g.Process(ctx, m, h)
		switch {
		case err == nil: // Processed, or a Duplicate of a processed message: acknowledge
			return again, nil
		case errors.Is(err, guard.ErrPoison):
			return again, fmt.Errorf("%s is poison: %w", m.ID, err)
		case outcome == guard.Failed || outcome == guard.InProgress:
			time.Sleep(20 * time.Millisecond) // the broker's redelivery delay
		default:
			return again, err
		}
	}
}

func idNumber(id string) int {
	var n int
	_, _ = fmt.Sscanf(id, "pay-%d", &n)
	return n
}
