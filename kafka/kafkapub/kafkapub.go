// Package kafkapub publishes the outbox's committed events to Kafka with franz-go: an
// outbox.Publisher that sends each message as a record whose headers carry the event id, and
// returns only once every record is acknowledged by all in-sync replicas of an idempotent
// producer. It lives in a module of its own so the library never requires a Kafka client.
//
// A record carries the event's key (its id when the event has none) for partitioning, the
// payload as its value, the event's staging time as its timestamp (the same on every
// republication, so a consumer that windows by message time, such as guard.Guard's batches,
// meets a republished event in the same window), and the headers header.ID, header.Type,
// header.Seq, header.Time (the staging time again, which a broker that restamps records keeps)
// and the event's own. Package header names them, so the consumer (kafka/kafkasub) reads them
// without importing this module. A Publisher is safe for concurrent use.
//
// # Routing
//
// New sends every message to one topic; WithRoute picks a topic per message instead, as
// Debezium's outbox EventRouter does: ByType("outbox.event.") sends each event to a topic named
// for its type. A message the route cannot place fails alone, as a rejection the relay parks.
//
// # Bounded by the relay's lease
//
// The relay gives every Publish a deadline inside its lease (outbox.WithPublishTimeout, 4s by
// default); records not yet sent when it ends fail at once, and the relay backs off without
// counting it toward parking the events. franz-go's record delivery timeout stays unlimited (see ClientOpts).
//
// # Which failures are the event's own
//
// Publish reports per record (outbox.PublishErrors), so the relay marks the operations whose
// records were acknowledged and retries only the others. Errors the broker returns for the
// record itself (too large, invalid, a timestamp out of range, not authorized, an invalid topic,
// a policy) are marked outbox.ErrRejected: the relay counts them toward parking the event.
// Timeouts, a broker that cannot be reached and a call that fails as a whole are not: the relay
// backs off and keeps the events pending, however long the broker is slow or away.
package kafkapub

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/outbox"
)

// ErrUnsafeClient: the client would not make a publication durable and free of producer
// duplicates: idempotent writes are disabled or acks are not all in-sync replicas.
var ErrUnsafeClient = errors.New("kafkapub: the client must be an idempotent producer with acks=all")

// ClientOpts are the producer options a Publisher needs: franz-go's defaults of an idempotent
// producer with acks=all, stated. Pass them to kgo.NewClient with the seed brokers. The relay
// bounds each Publish with its context (outbox.WithPublishTimeout): records not yet sent when it
// ends fail at once. A record delivery timeout shorter than a broker's first produce to a new
// topic made every later batch of an idempotent producer time out too, so none is set.
func ClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
}

// Publisher sends outbox messages to one topic, or to the topic its route picks per message.
type Publisher struct {
	client *kgo.Client
	topic  string
	route  Route
}

// New returns a publisher to topic over client, which the caller owns and closes. The client
// must keep franz-go's defaults of an idempotent producer with acks=all (ClientOpts; else
// ErrUnsafeClient). With WithRoute, topic may be empty: the route picks each message's topic.
func New(client *kgo.Client, topic string, opts ...Option) (*Publisher, error) {
	var c config
	if err := optcheck.Build(ErrInvalidOption, client == nil, "client", &c, opts); err != nil {
		return nil, err
	}
	if topic == "" && c.route == nil {
		return nil, fmt.Errorf("%w: an empty topic and no WithRoute", ErrInvalidOption)
	}
	if topic != "" {
		if err := validTopic(topic); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	if disabled, _ := client.OptValue(kgo.DisableIdempotentWrite).(bool); disabled {
		return nil, fmt.Errorf("%w: idempotent writes are disabled", ErrUnsafeClient)
	}
	if acks, ok := client.OptValue(kgo.RequiredAcks).(kgo.Acks); !ok || acks != kgo.AllISRAcks() {
		return nil, fmt.Errorf("%w: acks are not all in-sync replicas", ErrUnsafeClient)
	}
	return &Publisher{client: client, topic: topic, route: c.route}, nil
}

// Publish sends msgs and waits until every one is acknowledged; an error means some may not
// be, and the relay sends them all again (the consumer dedups on header.ID).
func (p *Publisher) Publish(ctx context.Context, msgs []outbox.Message) error {
	recs := make([]*kgo.Record, 0, len(msgs))
	errs := make([]error, len(msgs))
	sent := make([]int, 0, len(msgs)) // the message of each record in recs
	for i, m := range msgs {
		topic, err := p.topicOf(m)
		if err != nil {
			errs[i] = err
			continue
		}
		recs = append(recs, Record(topic, m))
		sent = append(sent, i)
	}
	unrouted := len(recs) < len(msgs)
	results := p.client.ProduceSync(ctx, recs...)
	if results.FirstErr() == nil && !unrouted {
		return nil
	}
	// ProduceSync lists results in the order their promises fired, not in the order of recs:
	// match each to its message by the record, or a failed message would be marked published.
	index := make(map[*kgo.Record]int, len(recs))
	for j, r := range recs {
		index[r] = sent[j]
	}
	for _, r := range results {
		i, ok := index[r.Record]
		if !ok {
			return fmt.Errorf("kafkapub: produce: %w", results.FirstErr()) // every message failed
		}
		if r.Err != nil {
			errs[i] = classify(r.Err)
		}
	}
	return fmt.Errorf("kafkapub: produce: %w", &outbox.PublishErrors{Errs: errs})
}

// rejected are the broker's answers about a record itself: sending it again cannot succeed.
var rejected = []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
	kerr.InvalidTimestamp, kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.PolicyViolation,
	kerr.InvalidTopicException}

// classify marks the errors of the record itself with outbox.ErrRejected, so the relay counts
// them toward parking the event. Everything else stays transient, so the relay backs off and
// never parks for it: a timeout (kgo.ErrRecordTimeout, the call's deadline), a broker that
// cannot be reached or has no leader, a topic not there yet, retries spent.
func classify(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrRecordTimeout) {
		return err
	}
	for _, r := range rejected {
		if errors.Is(err, r) {
			return fmt.Errorf("%w: %w", outbox.ErrRejected, err)
		}
	}
	return err
}

// Record is the record Publish sends for m.
func Record(topic string, m outbox.Message) *kgo.Record {
	key := m.Key
	if key == "" {
		key = m.ID
	}
	h := []kgo.RecordHeader{
		{Key: header.ID, Value: []byte(m.ID)},
		{Key: header.Type, Value: []byte(m.Type)},
		{Key: header.Seq, Value: []byte(strconv.Itoa(m.Sequence))},
	}
	if !m.StagedAt.IsZero() {
		h = append(h, kgo.RecordHeader{Key: header.Time, Value: []byte(strconv.FormatInt(m.StagedAt.UnixMilli(), 10))})
	}
	for k, v := range m.Headers {
		h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: m.Payload, Headers: h, Timestamp: m.StagedAt}
}

var _ outbox.Publisher = (*Publisher)(nil)
