package guard_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
)

// A consumer applies each poll with one call: the guard claims the poll's messages with one
// conditional batch per partition, the poll handler records all their effects with one
// RecordBatch, and the guard records the outcomes with one more batch per partition. The
// broker's offsets are committed once every message is Processed or Duplicate.
func ExampleGuard_ProcessPoll() {
	ctx := context.Background()
	session := exampleSession()
	g, err := guard.New(session)
	if err != nil {
		fmt.Println(err)
		return
	}
	log, err := events.NewLog(session)
	if err != nil {
		fmt.Println(err)
		return
	}
	apply := func(ctx context.Context, msgs []guard.Message) []error {
		evs := make([]events.Event, 0, len(msgs))
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			amount, err := strconv.ParseInt(string(m.Payload), 10, 64)
			if errs[i] = err; err == nil {
				evs = append(evs, events.Event{Counter: "revenue", ID: m.ID, Delta: amount, Time: m.Time})
			}
		}
		if err := log.RecordBatch(ctx, evs); err != nil {
			for i := range errs {
				errs[i] = err // none acknowledged: the poll is delivered again
			}
		}
		return errs
	}
	poll := []guard.Message{
		{Scope: guard.Scope{Group: "billing", Topic: "orders", Partition: 3}, ID: "orders/3/1", Payload: []byte("250"), Time: time.Now()},
		{Scope: guard.Scope{Group: "billing", Topic: "orders", Partition: 3}, ID: "orders/3/2", Payload: []byte("100"), Time: time.Now()},
	}
	results, err := g.ProcessPoll(ctx, poll, apply)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range results {
		fmt.Println(poll[i].ID, r.Outcome, r.Err)
	}
}

// ByKey keeps the order of one key's messages while the handlers of different keys run at
// once: here the messages of one account apply in order, sixteen accounts at a time.
func ExampleByKey() {
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	account := func(m guard.Message) string { return string(m.Payload[:8]) }
	apply := guard.ByKey(account, 16, func(ctx context.Context, m guard.Message) error {
		return nil // the message's effect, under its claim (lwt.ClaimFromContext(ctx))
	})
	_, err = g.ProcessPoll(context.Background(), nil, apply)
	fmt.Println(err)
}
