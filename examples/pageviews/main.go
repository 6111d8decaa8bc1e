// Command pageviews counts page views with the event log of package events instead of a native
// counter: every view is an event with the request's id, so a client or proxy that retries the
// request re-records the same event and the count stays exact.
//
//	go run ./examples/pageviews -hosts 127.0.0.1:9042
package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
)

func main() { exampledb.Print("pageviews", run) }

// run records 500 views, each sent one to three times as retries would, from 8 goroutines,
// while a rollup worker runs, and returns the total the log reports.
func run(ctx context.Context, session *gocql.Session, keyspace string, out io.Writer) (int64, error) {
	log, err := events.NewLog(session, events.WithKeyspace(keyspace))
	if err != nil {
		return 0, err
	}
	counter := fmt.Sprintf("views:home:%d", time.Now().UnixNano())

	rollupCtx, stopRollups := context.WithCancel(ctx)
	rollupDone := make(chan error, 1)
	go func() {
		// Folds every counter this Log records, at most log.Lag behind the clock: a few seconds
		// for a busy page, up to five minutes for one viewed now and then (events.WithWindowWidths).
		rollupDone <- log.RunRollups(rollupCtx, 200*time.Millisecond, nil)
	}()

	var sends atomic.Int64
	views := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range views {
				// The time the request first arrived; its retries carry the same one.
				e := events.Event{Counter: counter, ID: fmt.Sprintf("req-%d", i), Delta: 1, Time: time.Now()}
				for attempt := 0; attempt <= i%3; attempt++ { // 1, 2 or 3 sends of the same view
					sends.Add(1)
					if err := log.Record(ctx, e); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 500; i++ {
		views <- i
	}
	close(views)
	wg.Wait()
	stopRollups()
	if err := <-rollupDone; err != nil && err != context.Canceled {
		return 0, err
	}
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	total, err := log.Total(ctx, counter)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "%d sends of 500 views; %s = %d\n", sends.Load(), counter, total)
	return total, nil
}
