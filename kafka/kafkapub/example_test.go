package kafkapub_test

import (
	"log"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/kafka/kafkapub"
)

// A publisher for a relay: the relay bounds each Publish with its publish timeout, so a stuck
// broker cannot keep a pass past its lease.
func ExampleClientOpts() {
	cl, err := kgo.NewClient(append(kafkapub.ClientOpts(), kgo.SeedBrokers("127.0.0.1:9092"))...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	pub, err := kafkapub.New(cl, "orders")
	if err != nil {
		log.Fatal(err)
	}
	_ = pub // outbox.NewRelay(session, pub, outbox.WithPublishTimeout(outbox.DefaultPublishTimeout))
}

// A publisher that sends each event to a topic named for its type ("outbox.event.order.placed"
// for an "order.placed" event), as Debezium's outbox EventRouter does.
func ExampleWithRoute() {
	cl, err := kgo.NewClient(append(kafkapub.ClientOpts(), kgo.SeedBrokers("127.0.0.1:9092"))...)
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	pub, err := kafkapub.New(cl, "", kafkapub.WithRoute(kafkapub.ByType("outbox.event.")))
	if err != nil {
		log.Fatal(err)
	}
	_ = pub
}
