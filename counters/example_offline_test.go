package counters_test

import (
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/counters"
)

// New checks its options before it sends anything.
func ExampleNew() {
	session := &gocql.Session{} // a connected session in a real service; nothing is sent here
	_, err := counters.New(session, counters.WithShards(0))
	fmt.Println(errors.Is(err, counters.ErrInvalidOption))
	// Output:
	// true
}
