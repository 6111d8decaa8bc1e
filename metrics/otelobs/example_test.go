package otelobs_test

import (
	"log"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
)

// One observer per store, on the global meter and tracer providers the service configured.
func ExampleNew() {
	var session *gocql.Session // your session
	payments, err := otelobs.New("payments")
	if err != nil {
		log.Fatal(err)
	}
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithObserver(payments))
	if err != nil {
		log.Fatal(err)
	}
	consumer, err := otelobs.New("invoice-consumer")
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(session, guard.WithObserver(consumer))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = store, g
}
