package kafkapub_test

import (
	"log"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/outbox/kafkapub"
)

// A publisher whose records fail within the relay's publish timeout, so a stuck broker cannot
// keep a relay's pass past its lease.
func ExampleClientOpts() {
	cl, err := kgo.NewClient(append(kafkapub.ClientOpts(outbox.DefaultPublishTimeout), kgo.SeedBrokers("127.0.0.1:9092"))...)
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
