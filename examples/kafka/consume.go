package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
)

// consumerConfig is one consumer process's settings.
type consumerConfig struct {
	name, topic, group string
	brokers            []string
	lease              time.Duration
	dupEvery           int
	maxPoll            int
	// bloom turns the Bloom fast path on for the partitions this consumer is assigned
	// (kafkasub.WithFastPath).
	bloom bool
	// stallAfter, when positive, makes the consumer stop inside a handler once it has
	// processed that many messages, after a few handlers of the poll ran: run kills it there,
	// mid-poll, the worst place for a consumer to die.
	stallAfter int64
}

// tally is what one consumer saw, printed as a progress line twice a second.
type tally struct {
	polled, processed, duplicate, redelivered, inProgress, poison atomic.Int64
}

// line reports the tally and the claims this consumer took over from a dead one.
func (c *consumer) line() string {
	t := &c.t
	takeovers := c.guard.BatchStats().Takeovers + c.guard.Stats().Takeovers
	return fmt.Sprintf("progress %s polled=%d processed=%d duplicate=%d redelivered=%d inprogress=%d poison=%d takeovers=%d",
		c.cfg.name, t.polled.Load(), t.processed.Load(), t.duplicate.Load(), t.redelivered.Load(), t.inProgress.Load(), t.poison.Load(), takeovers)
}

// consumer is one member of the group.
type consumer struct {
	cfg    consumerConfig
	guard  *guard.Guard
	fx     effects
	out    io.Writer
	t      tally
	stalls atomic.Int64
}

// consume runs one consumer until ctx ends, on kafkasub: each partition's records of a poll go
// through the guard's ProcessPoll, whose handlers of different payments run concurrently (each
// payment's deliveries in order, guard.ByKey), offsets are committed only past records
// processed (or found duplicates, or dead-lettered), a record to deliver again is sought back
// to, and rebalances
// wait for all that (kgo.BlockRebalanceOnPoll), so a partition moves only between polls of a
// live consumer; a dead one's uncommitted records are redelivered to the member that takes its
// partitions. With bloom, the fast path is on for the partitions assigned (Own at the group's
// generation, Disown on revocation), fenced on the server.
func consume(ctx context.Context, c *consumer) error {
	opts := []kafkasub.Option{
		kafkasub.WithClient(kgo.SeedBrokers(c.cfg.brokers...), kgo.ConsumerGroup(c.cfg.group), kgo.ConsumeTopics(c.cfg.topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond), kgo.ClientID(c.cfg.name)),
		kafkasub.WithMaxPollRecords(c.cfg.maxPoll), kafkasub.WithMessage(c.polledMessage), kafkasub.WithResults(c.tally),
	}
	if c.cfg.bloom {
		opts = append(opts, kafkasub.WithFastPath(newPreCheck))
	}
	sub, err := kafkasub.NewPoll(c.guard, guard.ByKey(paymentOf, handlersAtOnce, c.handle), opts...)
	if err != nil {
		return fmt.Errorf("%s: kafka consumer: %w", c.cfg.name, err)
	}
	stop := loopEvery(ctx, 500*time.Millisecond, func() { fmt.Fprintln(c.out, c.line()) })
	defer stop()
	return sub.Run(ctx)
}

// newPreCheck is the pre-check of a partition assigned with the fast path on. The default
// horizon (1 h): Kafka's record timestamps let the pre-check vouch for messages within it;
// older ones take the LWT path.
func newPreCheck(scope guard.Scope) (lwt.PreCheck, error) {
	return bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", scope.Group, scope.Topic, scope.Partition),
		bloom.WithExpectedItems(100_000), bloom.WithFalsePositiveRate(0.001))
}

// message turns a record into the guard's message: the id from the producer's header, the
// time the producer set (kafkasub.RecordTime refuses a time the broker set: the copies of one
// message would land in different windows).
func (c *consumer) message(group string, r *kgo.Record) (guard.Message, error) {
	at, err := kafkasub.RecordTime(r)
	if err != nil {
		return guard.Message{}, err
	}
	m := guard.Message{Scope: guard.Scope{Group: group, Topic: r.Topic, Partition: r.Partition},
		Payload: r.Value, Time: at}
	for _, h := range r.Headers {
		if h.Key == idHeader {
			m.ID = string(h.Value)
		}
	}
	if m.ID == "" {
		return m, fmt.Errorf("record %s/%d@%d has no %s header", r.Topic, r.Partition, r.Offset, idHeader)
	}
	return m, nil
}

// polledMessage counts a record delivered to the consumer and reads it.
func (c *consumer) polledMessage(group string, r *kgo.Record) (guard.Message, error) {
	c.t.polled.Add(1)
	return c.message(group, r)
}

// tally counts what the guard did with a record.
func (c *consumer) tally(r *kgo.Record, res guard.BatchResult) {
	switch res.Outcome {
	case guard.Processed:
		c.t.processed.Add(1)
	case guard.Duplicate:
		c.t.duplicate.Add(1)
		if m, err := c.message(c.cfg.group, r); err == nil && !isProducerDuplicate(m.ID, c.cfg.dupEvery) {
			c.t.redelivered.Add(1) // only a redelivery can find this id processed
		}
	case guard.Poison:
		c.t.poison.Add(1) // kafkasub logs it and moves on; a real consumer would dead-letter it
	case guard.InProgress:
		c.t.inProgress.Add(1)
	}
}

// loopEvery calls fn every d until ctx ends or stop is called; stop returns once the loop ended,
// so fn is not running after it.
func loopEvery(ctx context.Context, d time.Duration, fn func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { cancel(); <-done }
}

// handlersAtOnce bounds the handlers of one poll that run at once.
const handlersAtOnce = 16

// paymentOf is the key whose deliveries must apply in order: the payment (the message id).
func paymentOf(m guard.Message) string { return m.ID }

// handle is the side effect: the effect row, fenced by the claim's token (0 on the fast path,
// which has no claim), and the run counter.
func (c *consumer) handle(ctx context.Context, m guard.Message) error {
	if c.cfg.stallAfter > 0 && c.t.processed.Load() >= c.cfg.stallAfter {
		// The fourth handler from here on stalls, and every one after it: run kills this
		// process now, with three handlers of the poll done and at most handlersAtOnce-1
		// others that were running beside the stalled one.
		if n := c.stalls.Add(1); n >= 4 {
			if n == 4 {
				fmt.Fprintf(c.out, "stalled %s in the handler of %s\n", c.cfg.name, m.ID)
			}
			<-ctx.Done()
			return ctx.Err()
		}
	}
	var fence int64
	if claim, ok := lwt.ClaimFromContext(ctx); ok {
		fence = claim.Fence
	}
	return c.fx.apply(ctx, m.Topic, m.ID, c.cfg.name, fence)
}
