package events_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
)

// Let a poison message run again once its cause is fixed: the next delivery runs the handler.
func ExampleGuard_ReleaseMessage() {
	guard, err := events.NewGuard(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := events.Scope{Group: "billing", Topic: "invoices", Partition: 3}
	res, err := guard.ReleaseMessage(context.Background(), scope, "inv-1007", lwt.WithNote("smtp relay fixed, INC-2231"))
	switch {
	case errors.Is(err, lwt.ErrInProgress):
		fmt.Println("a consumer is processing it now")
	case err != nil:
		fmt.Println(err)
	case res.Changed:
		fmt.Println("released; it was", res.Before.Status, "after", res.Before.Attempts, "attempts")
	}
}

// MinBatchBuckets gives the buckets a rate needs under MaxPartitionRows rows per partition.
func ExampleMinBatchBuckets() {
	for _, rate := range []int{1_000, events.DefaultPartitionRate, 100_000} {
		fmt.Printf("%d msg/s: %d buckets of %v\n", rate, events.MinBatchBuckets(rate, events.DefaultBatchWindow), events.DefaultBatchWindow)
	}
	// Output:
	// 1000 msg/s: 1 buckets of 1m0s
	// 10000 msg/s: 6 buckets of 1m0s
	// 100000 msg/s: 60 buckets of 1m0s
}

// A consumer group whose busiest broker partition carries 100,000 messages per second: the
// default 8 buckets would put 750,000 rows in a partition, so NewGuard refuses them, and the
// buckets MinBatchBuckets gives are accepted. For a group with records, the new layout applies
// from a window boundary LayoutSwitchDelay ahead; earlier messages are still found where they are.
func ExampleWithPartitionRate() {
	const rate = 100_000
	_, err := events.NewGuard(exampleSession(), events.WithPartitionRate(rate))
	fmt.Println(errors.Is(err, events.ErrUnboundedPartition))
	guard, err := events.NewGuard(exampleSession(), events.WithPartitionRate(rate),
		events.WithBatchBuckets(events.MinBatchBuckets(rate, events.DefaultBatchWindow)))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = guard // guard.ProcessBatch(ctx, poll, handler)
}
