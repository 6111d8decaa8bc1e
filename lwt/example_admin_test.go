package lwt_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cassdedup/cassdedup/lwt"
)

// An operator's repair in code: release a key whose worker died so that the client's next
// retry runs the operation again. A live lease is refused unless lwt.Force() is passed.
func ExampleStore_ReleaseKey() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.ReleaseKey(context.Background(), lwt.IdempotencyKey("tenant-42", "charge-7f3a"),
		lwt.WithNote("worker lost in incident 1234"))
	var live *lwt.InProgressError
	switch {
	case errors.As(err, &live):
		fmt.Println("a worker holds it until", live.LeaseUntil)
	case err != nil:
		log.Fatal(err)
	case res.Changed:
		fmt.Println("released; it was", res.Before.Status)
	}
}

// Decide on what was shown: inspect a key, and release it only if it is still that record
// and not COMPLETED, whose next retry would run the operation a second time.
func ExampleIfUnchanged() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	key := lwt.IdempotencyKey("tenant-42", "charge-7f3a")
	seen, err := store.Inspect(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	if seen.Status == lwt.StatusCompleted {
		fmt.Println("completed: leave it")
		return
	}
	_, err = store.ReleaseKey(ctx, key, lwt.IfUnchanged(seen))
	if errors.Is(err, lwt.ErrRecordChanged) {
		fmt.Println("changed since it was inspected; look again")
	} else if err != nil {
		log.Fatal(err)
	}
}

// Find the claims that are stuck: STARTED past their lease, or RELEASED three times or more.
// The scan reads the table in token ranges, four at a time, at most 2000 rows a second.
func ExampleStore_ScanStuck() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	stats, err := store.ScanStuck(context.Background(), lwt.StuckOptions{MinAttempts: 3},
		func(c lwt.StuckClaim) error {
			fmt.Println(c.Key, c.Reason, c.Record.Attempts, c.Record.LeaseUntil)
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(stats.Rows, "records read,", stats.Matched, "stuck")
}

// A sticky router whose epochs started again from 1 (its assignment log was lost): Own of every
// namespace it owned before fails with lwt.ErrEpochRegressed. Once no process of the old
// epochs runs, a dry run shows what would be forgotten, and the repair forgets the rows nobody
// holds a lease on; the next Own takes each namespace at any epoch.
func ExampleStore_ForgetOwners() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	dry, err := store.ForgetOwners(ctx, nil, true)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range dry {
		fmt.Println(o.Scope, "epoch", o.Epoch, "would be forgotten:", o.Forgotten)
	}
	if _, err := store.ForgetOwners(ctx, nil, false); err != nil {
		log.Fatal(err)
	}
}
