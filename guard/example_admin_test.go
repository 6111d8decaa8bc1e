package guard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// Let a poison message run again once its cause is fixed: the next delivery runs the handler.
func ExampleGuard_ReleaseMessage() {
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := guard.Scope{Group: "billing", Topic: "invoices", Partition: 3}
	res, err := g.ReleaseMessage(context.Background(), scope, "inv-1007", lwt.WithNote("smtp relay fixed, INC-2231"))
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
	for _, rate := range []int{1_000, guard.DefaultPartitionRate, 100_000} {
		fmt.Printf("%d msg/s: %d buckets of %v\n", rate, guard.MinBatchBuckets(rate, guard.DefaultBatchWindow), guard.DefaultBatchWindow)
	}
	// Output:
	// 1000 msg/s: 1 buckets of 1m0s
	// 10000 msg/s: 6 buckets of 1m0s
	// 100000 msg/s: 60 buckets of 1m0s
}

// A consumer group whose busiest broker partition carries 100,000 messages per second: the
// default 8 buckets would put 750,000 rows in a partition, so New refuses them, and the
// buckets MinBatchBuckets gives are accepted. For a group with records, the new layout applies
// from a window boundary LayoutSwitchDelay ahead; earlier messages are still found where they are.
func ExampleWithPartitionRate() {
	const rate = 100_000
	_, err := guard.New(exampleSession(), guard.WithPartitionRate(rate))
	fmt.Println(errors.Is(err, guard.ErrUnboundedPartition))
	g, err := guard.New(exampleSession(), guard.WithPartitionRate(rate),
		guard.WithBatchBuckets(guard.MinBatchBuckets(rate, guard.DefaultBatchWindow)))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = g // g.ProcessBatch(ctx, poll, handler)
}

// After a consumer group was deleted and made again, its consumers' Own fails with
// lwt.ErrEpochRegressed: the owners table still holds the old generations. Once no consumer of
// the old group runs, list what a repair would forget, then forget it (cassdedup owners forget
// does the same).
func ExampleGuard_ForgetOwners() {
	g, err := guard.New(exampleSession())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	err = g.ListOwners(ctx, "billing", func(o guard.Owner) error {
		fmt.Println(o.Scope.Topic, o.Scope.Partition, "epoch", o.Epoch, "live lease:", o.Live())
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	owners, err := g.ForgetOwners(ctx, "billing", false)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range owners {
		if !o.Forgotten {
			fmt.Println("kept, a lease is live:", o.Scope.Topic, o.Scope.Partition)
		}
	}
}
