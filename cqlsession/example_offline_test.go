package cqlsession_test

import (
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
)

// The configuration is built without contacting a node: what it sets can be read before
// CreateSession, and a local consistency without a local datacentre is refused.
func ExampleConsistencies() {
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cluster.Consistency, cluster.SerialConsistency, cluster.WriteCoalesceWaitTime, cluster.RetryPolicy)
	fmt.Println(cqlsession.Consistencies("dc1"))

	_, err = cqlsession.NewCluster([]string{"127.0.0.1"}, cqlsession.WithConsistency(gocql.LocalQuorum))
	fmt.Println(errors.Is(err, cqlsession.ErrInvalidOption))
	// Output:
	// QUORUM SERIAL 0s <nil>
	// LOCAL_QUORUM LOCAL_SERIAL
	// true
}
