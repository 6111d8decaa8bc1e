package events_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/bloom"
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

// Process each delivery of an at-least-once consumer once.
func ExampleGuard_Process() {
	ctx := context.Background()
	guard, err := events.NewGuard(exampleSession(), events.WithMaxAttempts(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := events.Message{
		Scope:   events.Scope{Group: "billing", Topic: "payments", Partition: 3},
		ID:      "offset-1029",
		Payload: []byte(`{"charge":42}`),
	}
	out, err := guard.Process(ctx, m, func(ctx context.Context, m events.Message) error {
		return nil // charge the card
	})
	switch {
	case err == nil: // Processed or Duplicate
		fmt.Println("ack", out)
	case errors.Is(err, events.ErrPoison):
		fmt.Println("dead-letter, then ack:", err)
	default: // InProgress or Failed: leave it to the broker to redeliver
		fmt.Println("nack", out, err)
	}
}

// Turn the fast path on for a partition this consumer was assigned, and off when it is revoked.
func ExampleGuard_Own() {
	ctx := context.Background()
	guard, err := events.NewGuard(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := events.Scope{Group: "billing", Topic: "payments", Partition: 3}
	pre, err := bloom.NewPreCheck("billing/payments/3", bloom.WithExpectedItems(5_000_000),
		bloom.WithRetention(events.DefaultRetention+time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	generation := uint64(42) // from the group coordinator's assignment: it grows on every rebalance
	if err := guard.Own(ctx, scope, generation, pre); err != nil {
		fmt.Println("fast path stays off:", err) // every message still takes the LWT path
	}
	defer guard.Disown(scope) // on revocation, before another consumer can get the partition

	m := events.Message{Scope: scope, ID: "offset-1030", Payload: []byte(`{"charge":7}`)}
	out, err := guard.Process(ctx, m, func(ctx context.Context, m events.Message) error { return nil })
	fmt.Println(out, err)
	s := guard.Stats()
	fmt.Println(s.FastPath, pre.Stats().WarmUpKeys)
}

// Process one poll of a broker partition with two conditional batches instead of two LWTs per
// message, and commit the offset only below the first message left for redelivery.
func ExampleGuard_ProcessBatch() {
	ctx := context.Background()
	guard, err := events.NewGuard(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	// What a poll of topic "orders", partition 7, returned: the producer set each id and time.
	produced := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var poll []events.Message
	for i := range 100 {
		poll = append(poll, events.Message{Scope: events.Scope{Group: "billing", Topic: "orders", Partition: 7},
			ID: fmt.Sprintf("order-%d", i), Payload: []byte(`{"amount":100}`), Time: produced.Add(time.Duration(i) * time.Millisecond)})
	}
	results, err := guard.ProcessBatch(ctx, poll, func(ctx context.Context, m events.Message) error {
		return nil // apply the order; lwt.ClaimFromContext(ctx) carries its fencing token
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	acked := 0
	for _, r := range results {
		if r.Outcome == events.InProgress || r.Outcome == events.Failed {
			break // redeliver from here on
		}
		acked++ // Processed, Duplicate, or Poison (dead-lettered)
	}
	fmt.Println("commit offset of message", acked)
}
