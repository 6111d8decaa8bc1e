package cqlsession_test

import (
	"context"
	"log"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/lwt"
)

// A service in datacentre dc1 builds its session from the recommended configuration, adds its
// own settings (keyspace, authentication, TLS) and hands the session to the stores.
func ExampleNewCluster() {
	cluster, err := cqlsession.NewCluster([]string{"10.0.1.1", "10.0.1.2", "10.0.1.3"}, cqlsession.WithLocalDC("dc1"))
	if err != nil {
		log.Fatal(err)
	}
	cluster.Keyspace = "cassdedup"
	session, err := cluster.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	// The store chooses its consistencies itself: the local ones, like the session's.
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"),
		lwt.WithSerialConsistency(gocql.LocalSerial), lwt.WithConsistency(gocql.LocalQuorum))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("tenant-42/charges", "key-1"),
		func(context.Context) ([]byte, error) { return []byte("charged"), nil })
}
