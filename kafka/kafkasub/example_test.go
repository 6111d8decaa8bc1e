package kafkasub_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gocql/gocql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
)

// A consumer of the outbox's events: each record applied once, offsets committed only past
// what was applied, the Bloom fast path on for the partitions this member is assigned.
func ExampleNew() {
	var session *gocql.Session // cqlsession.NewCluster(...).CreateSession()
	ctx := context.Background()
	g, err := guard.New(session)
	if err != nil {
		log.Fatal(err)
	}
	apply := func(ctx context.Context, m guard.Message) error {
		return nil // the effect of event m.ID; an error delivers the record again
	}
	consumer, err := kafkasub.New(g, apply,
		kafkasub.WithClient(kgo.SeedBrokers("127.0.0.1:19092"), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders")),
		kafkasub.WithFastPath(func(s guard.Scope) (lwt.PreCheck, error) {
			return bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", s.Group, s.Topic, s.Partition), bloom.WithExpectedItems(3_600_000))
		}))
	if err != nil {
		log.Fatal(err)
	}
	if err := consumer.Run(ctx); err != nil { // until ctx ends
		log.Fatal(err)
	}
}

// A consumer of a topic whose broker stamps every record (message.timestamp.type=LogAppendTime):
// each message's time is the event's staging time, which kafkapub writes in a header, so the
// copies of one event meet in the guard's tables whenever they were appended.
func ExampleWithTimeHeader() {
	var session *gocql.Session // cqlsession.NewCluster(...).CreateSession()
	g, err := guard.New(session)
	if err != nil {
		log.Fatal(err)
	}
	apply := func(ctx context.Context, m guard.Message) error { return nil }
	consumer, err := kafkasub.New(g, apply,
		kafkasub.WithClient(kgo.SeedBrokers("127.0.0.1:19092"), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders")),
		kafkasub.WithTimeHeader(header.Time))
	if err != nil {
		log.Fatal(err)
	}
	_ = consumer.Run(context.Background())
}
