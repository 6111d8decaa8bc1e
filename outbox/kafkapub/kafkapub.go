// Package kafkapub publishes the outbox's committed events to Kafka with franz-go: an
// outbox.Publisher that sends each message as a record whose headers carry the event id, and
// returns only once every record is acknowledged by all in-sync replicas of an idempotent
// producer. It lives in a module of its own so the library never requires a Kafka client.
//
// A record carries the event's key (its id when the event has none) for partitioning, the
// payload as its value, the event's staging time as its timestamp (the same on every
// republication, so a consumer that windows by message time, such as guard.Guard's batches,
// meets a republished event in the same window), and the headers IDHeader, TypeHeader,
// SeqHeader and the event's own. A Publisher is safe for concurrent use.
package kafkapub

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/outbox"
)

// The headers every record carries.
const (
	IDHeader   = "event-id"   // outbox.Message.ID: dedup on it
	TypeHeader = "event-type" // outbox.Message.Type
	SeqHeader  = "event-seq"  // the event's place in its operation, from 0
)

// ErrUnsafeClient: the client would not make a publication durable and free of producer
// duplicates: idempotent writes are disabled or acks are not all in-sync replicas.
var ErrUnsafeClient = errors.New("kafkapub: the client must be an idempotent producer with acks=all")

// Publisher sends outbox messages to one topic.
type Publisher struct {
	client *kgo.Client
	topic  string
}

// New returns a publisher to topic over client, which the caller owns and closes. The client
// must keep franz-go's defaults of an idempotent producer with acks=all (else ErrUnsafeClient).
func New(client *kgo.Client, topic string) (*Publisher, error) {
	if client == nil || topic == "" {
		return nil, fmt.Errorf("kafkapub: nil client or empty topic")
	}
	if disabled, _ := client.OptValue(kgo.DisableIdempotentWrite).(bool); disabled {
		return nil, fmt.Errorf("%w: idempotent writes are disabled", ErrUnsafeClient)
	}
	if acks, ok := client.OptValue(kgo.RequiredAcks).(kgo.Acks); !ok || acks != kgo.AllISRAcks() {
		return nil, fmt.Errorf("%w: acks are not all in-sync replicas", ErrUnsafeClient)
	}
	return &Publisher{client: client, topic: topic}, nil
}

// Publish sends msgs and waits until every one is acknowledged; an error means some may not
// be, and the relay sends them all again (the consumer dedups on IDHeader).
func (p *Publisher) Publish(ctx context.Context, msgs []outbox.Message) error {
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		recs[i] = Record(p.topic, m)
	}
	if err := p.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("kafkapub: produce: %w", err)
	}
	return nil
}

// Record is the record Publish sends for m.
func Record(topic string, m outbox.Message) *kgo.Record {
	key := m.Key
	if key == "" {
		key = m.ID
	}
	h := []kgo.RecordHeader{
		{Key: IDHeader, Value: []byte(m.ID)},
		{Key: TypeHeader, Value: []byte(m.Type)},
		{Key: SeqHeader, Value: []byte(strconv.Itoa(m.Sequence))},
	}
	for k, v := range m.Headers {
		h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: m.Payload, Headers: h, Timestamp: m.StagedAt}
}

var _ outbox.Publisher = (*Publisher)(nil)
