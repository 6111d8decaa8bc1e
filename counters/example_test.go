package counters_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/cqlsession"
)

// A retried increment is applied once; an unconfirmed one is left for repair.
func ExampleStore_Increment() {
	// The recommended configuration sets no driver retries: counter updates and LWTs must
	// never be re-sent by the driver.
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1:9042"})
	if err != nil {
		fmt.Println(err)
		return
	}
	session, err := cluster.CreateSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	store, err := counters.New(session)
	if err != nil {
		fmt.Println(err)
		return
	}
	op := counters.Op{Counter: "page-views:home", ID: "request-7f3a", Delta: 1}
	for range 2 { // the second call is a retry
		out, err := store.Increment(context.Background(), op)
		if errors.Is(err, counters.ErrUnconfirmed) {
			fmt.Println("left for repair")
			return
		}
		fmt.Println(out, err)
	}
}

// A repair job lists the claims that were never marked applied.
func ExampleStore_ListUnapplied() {
	var store *counters.Store // from counters.New
	now := time.Now()
	claims, err := store.ListUnapplied(context.Background(), now.Add(-24*time.Hour), now.Add(-time.Minute), 1000)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range claims {
		fmt.Printf("%s %s %+d claimed %v: check whether it was applied\n", c.Counter, c.OpID, c.Delta, c.ClaimedAt)
	}
}
