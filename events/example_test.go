package events_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/events"
)

func exampleSession() *gocql.Session {
	// The recommended configuration sets no driver retries: conditional writes must never be
	// re-sent by the driver.
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1:9042"})
	if err != nil {
		panic(err)
	}
	session, err := cluster.CreateSession()
	if err != nil {
		panic(err)
	}
	return session
}

// Count page views exactly, whatever the retries.
func ExampleLog() {
	ctx := context.Background()
	log, err := events.NewLog(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	// The request id names the increment; its arrival time picks the bucket on every retry.
	view := events.Event{Counter: "views:home", ID: "req-81c2", Delta: 1, Time: time.Now()}
	for range 3 {
		if err := log.Record(ctx, view); err != nil {
			fmt.Println(err)
			return
		}
	}
	total, err := log.Total(ctx, "views:home")
	fmt.Println(total, err)
}

// Run rollups in a goroutine the caller owns, stopped by its context.
func ExampleLog_RollupEvery() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, err := events.NewLog(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() {
		done <- log.RollupEvery(ctx, time.Minute, func(c string, err error) { fmt.Println(c, err) }, "views:home")
	}()
	// ... serve ...
	cancel()
	fmt.Println(<-done)
}

// Fold the windows of every counter this process records, in a goroutine the caller owns: a
// total then reads at most Lag(interval) of each counter's events.
func ExampleLog_RunRollups() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, err := events.NewLog(exampleSession(), events.WithParts(8))
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() {
		done <- log.RunRollups(ctx, 500*time.Millisecond, func(c string, err error) { fmt.Println(c, err) })
	}()
	fmt.Println("lag", log.Lag(500*time.Millisecond))
	// ... record events, read totals ...
	cancel()
	fmt.Println(<-done)
}

// Count page views of ten million pages: most are viewed now and then, a few thousand times a
// second. A page's windows widen to a minute while it is cold (one index row per minute of its
// views) and narrow to 100 ms while it is hot (a total sums at most a tenth of a second of its
// views on the node); the widths are stored with the counter, so every process agrees.
func ExampleWithWindowWidths() {
	log, err := events.NewLog(exampleSession(), events.WithWindowWidths(100*time.Millisecond, time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rollups lag at most", log.Lag(500*time.Millisecond))
}
