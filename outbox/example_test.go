package outbox_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
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

func ExampleOutbox_Stage() {
	session := connect()
	defer session.Close()
	// The store's table declares the outbox column, so runs can carry events.
	store, err := lwt.NewStore(session, outbox.Table("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	box, err := outbox.New(session)
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("shop", "order-7f3a"), func(ctx context.Context) ([]byte, error) {
		// Write the order, then announce it: the event commits with the result or not at all.
		if err := box.Stage(ctx, outbox.Event{Type: "order.placed", Key: "order-7f3a", Payload: []byte(`{"total":1000}`)}); err != nil {
			return nil, err
		}
		return []byte(`{"order":"order-7f3a"}`), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s replay=%v\n", res.Value, res.Replay)
}

func ExampleRelay_Run() {
	session := connect()
	defer session.Close()
	pub := outbox.PublisherFunc(func(ctx context.Context, msgs []outbox.Message) error {
		for _, m := range msgs {
			// Send m with m.ID as a header, and return only once the broker acknowledged it.
			fmt.Println(m.ID, m.Type, m.Key)
		}
		return nil
	})
	// Run two or more relays with WithMaxShards(ceil(16/n)) to share the shards. Each Publish
	// ends within the publish timeout, inside the lease; slow and failed publications, parked
	// events and lost shards are logged.
	relay, err := outbox.NewRelay(session, pub, outbox.WithPublishTimeout(4*time.Second),
		outbox.WithLogger(slog.Default()))
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	_ = relay.Run(ctx, func(st outbox.Stats, err error) {
		if err != nil {
			log.Printf("outbox relay: %v", err)
		}
		if st.Parked > 0 || st.Oldest > 5*time.Minute {
			log.Printf("outbox relay: %d parked, oldest pending %v: see cassdedup outbox parked", st.Parked, st.Oldest)
		}
	})
}

// An operator's round of the parked events: list them, then hand back to the relay those whose
// cause was fixed (published with the same ids) and discard those that must never be published.
func ExampleAdmin_ListParked() {
	session := connect()
	defer session.Close()
	admin, err := outbox.NewAdmin(session) // the layout stored with the intents
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = admin.ListParked(ctx, func(p outbox.Parked) error {
		fmt.Printf("%q %q: %s after %d attempts: %s\n", p.Namespace, p.Key, p.Reason, p.Attempts, p.LastError)
		if p.Reason == outbox.ReasonPoison {
			_, err := admin.Unpark(ctx, p.Namespace, p.Key, false)
			return err
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// A saga step: a consumer that reacts to an order by requesting its shipment. The event commits
// with the message's processed mark or not at all, so a failed handler announces nothing and a
// redelivery announces nothing twice.
func Example_consumerGuard() {
	session := connect()
	defer session.Close()
	// The guard's record table declares the outbox column; such a guard has no fast path.
	g, err := guard.New(session, guard.WithCompletionColumns(outbox.ColumnName))
	if err != nil {
		log.Fatal(err)
	}
	box, err := outbox.New(session)
	if err != nil {
		log.Fatal(err)
	}
	msg := guard.Message{Scope: guard.Scope{Group: "shipping", Topic: "orders", Partition: 3}, ID: "order-7f3a"}
	out, err := g.Process(context.Background(), msg, func(ctx context.Context, m guard.Message) error {
		return box.Stage(ctx, outbox.Event{Type: "shipment.requested", Key: m.ID, Payload: []byte(`{"order":"order-7f3a"}`)})
	})
	if err != nil {
		log.Fatal(err)
	}
	// The relay publishes the event with this id, on every publication.
	fmt.Println(out, outbox.EventID(outbox.GuardNamespace("shipping", "orders", 3), "order-7f3a", 0))
}

// Key order, as a Debezium user expects of an aggregate: the events of one account are published
// in the order their operations were staged. Stagers, relays and admins of the intents table all
// take WithKeyOrder (the first stores it with the layout; one without it is refused); each run's
// events carry one key, the account's.
func ExampleWithKeyOrder() {
	session := connect()
	defer session.Close()
	store, err := lwt.NewStore(session, outbox.Table("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	box, err := outbox.New(session, outbox.WithKeyOrder())
	if err != nil {
		log.Fatal(err)
	}
	for _, op := range []struct{ id, typ string }{{"dep-1", "account.credited"}, {"wd-1", "account.debited"}} {
		_, err := store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("ledger", op.id), func(ctx context.Context) ([]byte, error) {
			// Every event of this run carries the account's key: another key would be
			// refused (outbox.ErrMixedKeys).
			return []byte("ok"), box.Stage(ctx, outbox.Event{Type: op.typ, Key: "acct-42"})
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	pub := outbox.PublisherFunc(func(ctx context.Context, msgs []outbox.Message) error {
		for _, m := range msgs {
			fmt.Println(m.Key, m.Type) // acct-42 account.credited, then acct-42 account.debited
		}
		return nil
	})
	relay, err := outbox.NewRelay(session, pub, outbox.WithKeyOrder())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := relay.Poll(context.Background()); err != nil {
		log.Print(err)
	}
}
