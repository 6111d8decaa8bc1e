package events_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/events"
)

// A consumer records each message's effect under the message's own time, however far behind
// its topic it runs: a message an hour old is counted once, in the window open now, and its
// redeliveries count nothing more.
func ExampleLog_Record_late() {
	ctx := context.Background()
	log, err := events.NewLog(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := events.Event{Counter: "orders:paid", ID: "orders/3/88412", Delta: 1, Time: time.Now().Add(-time.Hour)}
	for range 2 { // a delivery and its redelivery
		if err := log.Record(ctx, msg); err != nil {
			fmt.Println(err) // not ErrBucketClosed: late events are never refused
			return
		}
	}
	total, err := log.Total(ctx, "orders:paid")
	fmt.Println(total, err)
}

// A consumer that fell behind records the effects of a whole poll with one call: the late
// events of one counter and one second are claimed with one conditional batch, and their rows
// go out with the on-time ones. Recording the poll again counts nothing more.
func ExampleLog_RecordBatch() {
	ctx := context.Background()
	log, err := events.NewLog(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	var poll []events.Event
	for i := range 100 {
		poll = append(poll, events.Event{Counter: "orders:paid", ID: fmt.Sprint("orders/3/", 88000+i), Delta: 1,
			Time: at.Add(time.Duration(i) * time.Millisecond)})
	}
	for range 2 { // a poll and its redelivery
		if err := log.RecordBatch(ctx, poll); err != nil {
			fmt.Println(err)
			return
		}
	}
	total, err := log.Total(ctx, "orders:paid")
	fmt.Println(total, err)
}
