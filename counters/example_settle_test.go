package counters_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/counters"
)

// A repair job settles the claims never marked applied, deciding each from the service's own
// records: whether the increment reached the counter is something the store cannot know.
func ExampleStore_Settle() {
	var store *counters.Store                    // from counters.New
	var reachedCounter func(counters.Claim) bool // your evidence, e.g. an audit log
	now := time.Now()
	claims, err := store.ListUnapplied(context.Background(), now.Add(-24*time.Hour), now.Add(-5*time.Minute), 100)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range claims {
		if c.Settling {
			continue // a repair is running, or stopped: see counters.ResettleStuck
		}
		if _, err := store.Settle(context.Background(), c.Counter, c.OpID, reachedCounter(c)); err != nil {
			fmt.Println(c.OpID, err)
		}
	}
}
