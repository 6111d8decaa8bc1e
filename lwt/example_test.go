package lwt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/lwt"
)

// The examples need a node with the schema applied (schema.Apply or cqlsh -f schema/cql/*.cql),
// so they are compiled but not run by go test.

func connect() *gocql.Session {
	// Start from the recommended configuration: no write coalescing, token-aware routing,
	// the consistencies the stores need.
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

// A function whose only effect is its result (here an order's confirmation, built from the
// request) may run more than once: WithRepeatableFunction runs it before anything is claimed and
// commits its result with one conditional insert, one Paxos round instead of two. Racing callers
// all run it; one result is committed and every caller gets it. Never for a card charge or an
// email.
func ExampleWithRepeatableFunction() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	request := []byte(`{"sku":"A-7","qty":2}`)
	res, err := store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("tenant-42", "order-9b1c"),
		func(ctx context.Context) ([]byte, error) {
			return []byte(`{"order":"9b1c","status":"accepted"}`), nil
		}, lwt.WithRequest(request), lwt.WithRepeatableFunction())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s created=%v replay=%v\n", res.Value, res.Created, res.Replay)
}

// routedKeys stands for the sticky router's own log of the keys it sent to a namespace:
// idempotency_keys has no index by namespace, so the warm-up's keys come from the caller.
func routedKeys(ctx context.Context, namespace string, since time.Time, yield func(key string, at time.Time) error) error {
	return nil
}

// A sticky router assigned this process the namespace "tenant-42" at epoch 7 (its assignment
// generation, which grows on every reassignment): every call for the namespace now reaches this
// process alone, so keys the warm pre-check has never seen may skip the LWT.
func ExampleStore_Own() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	const namespace, epoch = "tenant-42", 7
	// Remember keys at least as long as the store does, plus the time a fast-path write may take.
	pre, err := bloom.NewPreCheck(namespace, bloom.WithExpectedItems(100_000),
		bloom.WithRetention(lwt.DefaultRetention+lwt.DefaultCommitTimeout))
	if err != nil {
		log.Fatal(err)
	}
	// The source must yield every key of the namespace still within the store's retention, or a
	// retry of a key it misses runs its function again.
	src := func(ctx context.Context, yield func(string, time.Time) error) error {
		return routedKeys(ctx, namespace, time.Now().Add(-lwt.DefaultRetention), yield)
	}
	if err := store.Own(ctx, lwt.Key{namespace}, epoch, pre, src); err != nil {
		log.Print(err) // the namespace keeps the LWT path; Own may be called again
	}
	// On reassignment, or as soon as the assignment is in doubt, before another process serves it.
	defer store.Disown(lwt.Key{namespace})

	res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, "charge-8c1d"),
		func(ctx context.Context) ([]byte, error) {
			return []byte(`{"charge":"ch_2"}`), nil
		}, lwt.WithRequest([]byte(`{"amount":500,"currency":"EUR"}`)))
	if err != nil {
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
	switch {
	case errors.Is(err, lwt.ErrInProgress), errors.Is(err, lwt.ErrKeyReuse):
		fmt.Println("refused:", err) // nothing ran; an HTTP API answers 409 or 422
		return
	case err != nil:
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

// Claim the records of one partition with one conditional batch, run each claimed operation,
// and end them all with another.
func ExampleBatchStore() {
	ctx := context.Background()
	store, err := lwt.NewBatchStore(connect(), lwt.BatchTable{Keyspace: "cassdedup", Name: "processed_messages_bucketed",
		PartitionColumns: []string{"consumer_group", "topic", "partition", "window_start", "bucket"}, KeyColumn: "message_id"})
	if err != nil {
		fmt.Println(err)
		return
	}
	partition := lwt.Key{"billing", "orders", 7, int64(1777636800), 0}
	begun, err := store.BeginBatch(ctx, partition, []lwt.BatchItem{{Key: "order-1"}, {Key: "order-2"}})
	if err != nil {
		fmt.Println(err) // a *cas.OutcomeUnknownError, a driver error, or bad input
		return
	}
	var ends []lwt.BatchEnd
	for _, b := range begun {
		switch {
		case b.Claim != nil: // ours: run it, fenced by b.Claim.Fence
			ends = append(ends, lwt.BatchEnd{Claim: b.Claim, Status: lwt.StatusCompleted, Result: []byte("done")})
		case b.Record != nil: // done before: replay b.Record.Result
		default: // b.Err: lwt.ErrInProgress or lwt.ErrKeyReuse
		}
	}
	for i, err := range store.FinishBatch(ctx, ends) {
		fmt.Println(ends[i].Claim.Key, err)
	}
}

// With the default horizon (one hour), the pre-check vouches for calls that carry their own
// time: a retry of a request made within the hour may skip the LWT, an older one takes it. The
// warm-up reads only the horizon, and memory grows with the rate times one hour.
func ExampleWithTime() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	const namespace, epoch = "tenant-42", 8
	pre, err := bloom.NewPreCheck(namespace, bloom.WithExpectedItems(100_000))
	if err != nil {
		log.Fatal(err)
	}
	src := func(ctx context.Context, yield func(string, time.Time) error) error {
		return routedKeys(ctx, namespace, time.Now().Add(-pre.Retention()-lwt.MaxClockSkew), yield)
	}
	if err := store.Own(ctx, lwt.Key{namespace}, epoch, pre, src); err != nil {
		log.Print(err)
	}
	defer store.Disown(lwt.Key{namespace})
	requested := time.Now() // when the client first sent the request, carried on its retries
	res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, "charge-8c1e"),
		func(ctx context.Context) ([]byte, error) { return []byte(`{"charge":"ch_3"}`), nil },
		lwt.WithTime(requested))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s replay=%v\n", res.Value, res.Replay)
}
