package lwt_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// NewStore checks its options before it sends anything: a lease longer than the retention is
// refused, since a claim must never outlive the record that holds it.
func ExampleNewStore() {
	session := &gocql.Session{} // a connected session in a real service; nothing is sent here
	_, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"),
		lwt.WithRetention(time.Hour), lwt.WithLease(2*time.Hour))
	fmt.Println(errors.Is(err, lwt.ErrInvalidOption))

	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithCache(10_000))
	fmt.Println(store != nil, err)
	// Output:
	// true
	// true <nil>
}
