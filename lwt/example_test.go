package lwt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// The examples need a node with the schema applied (schema.Apply or cqlsh -f schema/cql/*.cql),
// so they are compiled but not run by go test.

func connect() *gocql.Session {
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.Keyspace = "cassdedup"
	cluster.Consistency = gocql.Quorum
	session, err := cluster.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	return session
}

func ExampleStore_ExecuteOnce() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithCache(10_000))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	request := []byte(`{"amount":1000,"currency":"EUR"}`)
	res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey("tenant-42", "charge-7f3a"),
		func(ctx context.Context) ([]byte, error) {
			// Charge the card; a declined card is permanent and replayed to every retry.
			return []byte(`{"charge":"ch_1"}`), nil
		}, lwt.WithRequest(request))
	switch {
	case errors.Is(err, lwt.ErrOutcomeUnknown):
		log.Print("retry the same call later")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Printf("%s replay=%v\n", res.Value, res.Replay)
}

func ExampleExecute() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithLease(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	type receipt struct{ ID string }
	r, replay, err := lwt.Execute(context.Background(), store, lwt.IdempotencyKey("tenant-42", "order-9"),
		lwt.JSON[receipt]{}, func(ctx context.Context) (receipt, error) {
			return receipt{ID: "rcpt-1"}, nil
		}, lwt.WithWait())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, replay)
}

func ExampleStore_Begin() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	claim, stored, err := store.Begin(ctx, lwt.IdempotencyKey("tenant-42", "req-1"), []byte("sha256 of the request"))
	if code, ok := lwt.HTTPStatus(err); ok {
		fmt.Println("answer", code) // 400, 409 or 422
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if stored != nil {
		fmt.Printf("replay %s\n", stored.Result)
		return
	}
	if err := store.Complete(ctx, claim, []byte("201 Created")); err != nil {
		log.Fatal(err)
	}
}

func ExampleInsertIfNotExists() {
	session := connect()
	defer session.Close()
	owner, _ := gocql.RandomUUID()
	applied, existing, err := lwt.InsertIfNotExists(context.Background(),
		session.Query(`INSERT INTO idempotency_keys (namespace, key, status, owner) VALUES (?, ?, 'STARTED', ?) IF NOT EXISTS`, "ns", "k", owner),
		gocql.Serial)
	if errors.Is(err, lwt.ErrOutcomeUnknown) {
		// Read at SERIAL and look for owner before deciding anything.
		row, found, err := lwt.ReadSerial(context.Background(), session.Query(`SELECT owner FROM idempotency_keys WHERE namespace = ? AND key = ?`, "ns", "k"), gocql.Serial)
		fmt.Println(found && row["owner"] == owner, err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(applied, existing["owner"])
}
