package cas_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// The examples need a node with the schema applied (schema.Apply or cqlsh -f schema/cql/*.cql),
// so they are compiled but not run by go test.

func connect() *gocql.Session {
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1"})
	if err != nil {
		log.Fatal(err)
	}
	cluster.Keyspace = "cassdedup"
	session, err := cluster.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	return session
}

func ExampleInsertIfNotExists() {
	session := connect()
	defer session.Close()
	owner, _ := gocql.RandomUUID()
	applied, existing, err := cas.InsertIfNotExists(context.Background(),
		session.Query(`INSERT INTO idempotency_keys (namespace, key, status, owner) VALUES (?, ?, 'STARTED', ?) IF NOT EXISTS`, "ns", "k", owner),
		gocql.Serial)
	if errors.Is(err, cas.ErrOutcomeUnknown) {
		// Read at SERIAL and look for owner before deciding anything (Resolve does this).
		row, found, err := cas.ReadSerial(context.Background(), session.Query(`SELECT owner FROM idempotency_keys WHERE namespace = ? AND key = ?`, "ns", "k"), gocql.Serial)
		fmt.Println(found && row["owner"] == owner, err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(applied, existing["owner"])
}

// Resolve settles an unknown outcome itself: it reads the row back and asks Applied whether
// it shows this attempt's owner.
func ExampleResolve() {
	session := connect()
	defer session.Close()
	owner, _ := gocql.RandomUUID()
	applied, existing, err := cas.Resolve(context.Background(), cas.Conditional{
		Op:    "claim",
		Write: session.Query(`INSERT INTO idempotency_keys (namespace, key, status, owner) VALUES (?, ?, 'STARTED', ?) IF NOT EXISTS`, "ns", "k", owner),
		Read:  session.Query(`SELECT owner FROM idempotency_keys WHERE namespace = ? AND key = ?`, "ns", "k"),
		Applied: func(row cas.Row, found bool) bool {
			return found && row["owner"] == owner
		},
		Patience: 5 * time.Second,
	}, gocql.Quorum, gocql.Serial)
	if err != nil {
		log.Fatal(err) // an *cas.OutcomeUnknownError after 5 s of failed reads, or a driver error
	}
	fmt.Println(applied, existing["owner"])
}
