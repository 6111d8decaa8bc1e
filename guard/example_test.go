package guard_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/guard"
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

// Process each delivery of an at-least-once consumer once.
func ExampleGuard_Process() {
	ctx := context.Background()
	g, err := guard.New(exampleSession(), guard.WithMaxAttempts(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := guard.Message{
		Scope:   guard.Scope{Group: "billing", Topic: "payments", Partition: 3},
		ID:      "offset-1029",
		Payload: []byte(`{"charge":42}`),
	}
	out, err := g.Process(ctx, m, func(ctx context.Context, m guard.Message) error {
		return nil // charge the card
	})
	switch {
	case err == nil: // Processed or Duplicate
		fmt.Println("ack", out)
	case errors.Is(err, guard.ErrPoison):
		fmt.Println("dead-letter, then ack:", err)
	default: // InProgress or Failed: leave it to the broker to redeliver
		fmt.Println("nack", out, err)
	}
}

// Turn the fast path on for a partition this consumer was assigned, and off when it is revoked.
func ExampleGuard_Own() {
	ctx := context.Background()
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := guard.Scope{Group: "billing", Topic: "payments", Partition: 3}
	pre, err := bloom.NewPreCheck("billing/payments/3", bloom.WithExpectedItems(5_000_000),
		bloom.WithRetention(guard.DefaultRetention+time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	generation := uint64(42) // from the group coordinator's assignment: it grows on every rebalance
	if err := g.Own(ctx, scope, generation, pre); err != nil {
		fmt.Println("fast path stays off:", err) // every message still takes the LWT path
	}
	defer g.Disown(scope) // on revocation, before another consumer can get the partition

	m := guard.Message{Scope: scope, ID: "offset-1030", Payload: []byte(`{"charge":7}`)}
	out, err := g.Process(ctx, m, func(ctx context.Context, m guard.Message) error { return nil })
	fmt.Println(out, err)
	s := g.Stats()
	fmt.Println(s.FastPath, pre.Stats().WarmUpKeys)
}

// Process one poll of a broker partition with two conditional batches instead of two LWTs per
// message, and commit the offset only below the first message left for redelivery.
func ExampleGuard_ProcessBatch() {
	ctx := context.Background()
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	// What a poll of topic "orders", partition 7, returned: the producer set each id and time.
	produced := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var poll []guard.Message
	for i := range 100 {
		poll = append(poll, guard.Message{Scope: guard.Scope{Group: "billing", Topic: "orders", Partition: 7},
			ID: fmt.Sprintf("order-%d", i), Payload: []byte(`{"amount":100}`), Time: produced.Add(time.Duration(i) * time.Millisecond)})
	}
	results, err := g.ProcessBatch(ctx, poll, func(ctx context.Context, m guard.Message) error {
		return nil // apply the order; lwt.ClaimFromContext(ctx) carries its fencing token
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	acked := 0
	for _, r := range results {
		if r.Outcome == guard.InProgress || r.Outcome == guard.Failed {
			break // redeliver from here on
		}
		acked++ // Processed, Duplicate, or Poison (dead-lettered)
	}
	fmt.Println("commit offset of message", acked)
}

// Export what the guard knows of its clock, and tell a refusal for it from a handler's failure.
func ExampleGuard_Clock() {
	ctx := context.Background()
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	// promobs.NewClockCollector("guard", g.Clock) exports the same reading at every scrape.
	m := guard.Message{Scope: guard.Scope{Group: "billing", Topic: "payments", Partition: 3}, ID: "offset-1030", Time: time.Now()}
	_, err = g.Process(ctx, m, func(context.Context, guard.Message) error { return nil })
	if errors.Is(err, guard.ErrClockOffset) {
		// Nothing ran: leave the message to the broker, and look at the host's clock.
		r := g.Clock()
		fmt.Println("refused: offset", r.Offset, "known within", r.Bound)
		return
	}
	r := g.Clock()
	fmt.Println("measured:", r.Measured, "bound under 15s:", r.Bound < 15*time.Second)
}
