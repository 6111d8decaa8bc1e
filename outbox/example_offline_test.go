package outbox_test

import (
	"fmt"

	"github.com/cassdedup/cassdedup/outbox"
)

// An event's id derives from the operation that committed it, so every publication of it,
// a relay's retry or an operator's replay, carries the same id for the consumer to dedup on.
func ExampleEventID() {
	first := outbox.EventID("shop", "order-7f3a", 0)
	fmt.Println(len(first), first == outbox.EventID("shop", "order-7f3a", 0))
	fmt.Println(first == outbox.EventID("shop", "order-7f3a", 1))
	// Output:
	// 32 true
	// false
}
