package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// consumerConfig is one consumer process's settings.
type consumerConfig struct {
	name, topic, group string
	brokers            []string
	lease              time.Duration
	dupEvery           int
	maxPoll            int
	// bloom processes messages one at a time through Guard.Process with the Bloom fast path
	// on for the partitions this consumer is assigned, instead of ProcessPoll.
	bloom bool
	// stallAfter, when positive, makes the consumer stop inside a handler once it has
	// processed that many messages, after a few handlers of the poll ran: run kills it there,
	// mid-poll, the worst place for a consumer to die.
	stallAfter int64
}

// tally is what one consumer saw, printed as a progress line after every poll.
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
	cl     *kgo.Client
	mu     sync.Mutex
	owned  map[int32]*bloom.PreCheck
	stalls atomic.Int64
}

// consume runs one consumer until ctx ends: poll, process each partition's records through
// the guard, commit, repeat. Offsets are committed only after every record of the poll was
// processed (or found a duplicate, or dead-lettered), and rebalances wait for that
// (BlockRebalanceOnPoll), so a partition moves only between polls of a live consumer; a dead
// one's uncommitted records are redelivered to the member that takes its partitions.
func consume(ctx context.Context, c *consumer) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.cfg.brokers...), kgo.ConsumerGroup(c.cfg.group), kgo.ConsumeTopics(c.cfg.topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.ClientID(c.cfg.name),
	}
	if c.cfg.bloom {
		opts = append(opts, kgo.OnPartitionsAssigned(c.assigned), kgo.OnPartitionsRevoked(c.revoked), kgo.OnPartitionsLost(c.revoked))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("%s: kafka client: %w", c.cfg.name, err)
	}
	c.cl = cl
	defer cl.CloseAllowingRebalance() // a poll cut short by ctx has not allowed the rebalance yet
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, c.cfg.maxPoll)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", topic, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		var perr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if perr == nil && len(p.Records) > 0 {
				perr = c.process(ctx, p.Partition, p.Records)
			}
		})
		if perr != nil {
			return perr
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("%s: commit: %w", c.cfg.name, err)
		}
		cl.AllowRebalance()
		fmt.Fprintln(c.out, c.line())
	}
	return nil
}

// message turns a record into the guard's message: the id from the producer's header, the
// time the producer set.
func (c *consumer) message(r *kgo.Record) (guard.Message, error) {
	m := guard.Message{Scope: guard.Scope{Group: c.cfg.group, Topic: r.Topic, Partition: r.Partition},
		Payload: r.Value, Time: r.Timestamp}
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

// process runs the records of one partition of one poll through the guard until each can be
// acknowledged, redelivering in place those another consumer holds or whose handler failed.
func (c *consumer) process(ctx context.Context, partition int32, records []*kgo.Record) error {
	c.t.polled.Add(int64(len(records)))
	msgs := make([]guard.Message, len(records))
	for i, r := range records {
		m, err := c.message(r)
		if err != nil {
			return err
		}
		msgs[i] = m
	}
	for len(msgs) > 0 {
		outcomes, err := c.deliver(ctx, msgs)
		if err != nil {
			return err
		}
		var again []guard.Message
		for i, o := range outcomes {
			switch o.Outcome {
			case guard.Processed:
				c.t.processed.Add(1)
			case guard.Duplicate:
				c.t.duplicate.Add(1)
				if !isProducerDuplicate(msgs[i].ID, c.cfg.dupEvery) {
					c.t.redelivered.Add(1) // only a redelivery can find this id processed
				}
			case guard.Poison:
				c.t.poison.Add(1) // a real consumer would dead-letter it here
			case guard.InProgress:
				c.t.inProgress.Add(1)
				again = append(again, msgs[i])
			default:
				again = append(again, msgs[i])
			}
		}
		msgs = again
		if len(msgs) > 0 {
			if err := pause(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliver hands msgs to the guard: one ProcessPoll, whose handlers of different payments run
// concurrently (each payment's deliveries in order), or, with the Bloom fast path, one Process
// per message.
func (c *consumer) deliver(ctx context.Context, msgs []guard.Message) ([]guard.BatchResult, error) {
	if !c.cfg.bloom {
		return c.guard.ProcessPoll(ctx, msgs, guard.ByKey(paymentOf, handlersAtOnce, c.handle))
	}
	out := make([]guard.BatchResult, len(msgs))
	for i, m := range msgs {
		o, err := c.guard.Process(ctx, m, c.handle)
		out[i] = guard.BatchResult{Outcome: o, Err: err}
	}
	return out, nil
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

// assigned turns the fast path on for each partition assigned, at the group's generation:
// from now until revocation this consumer alone receives the partition's messages.
func (c *consumer) assigned(ctx context.Context, cl *kgo.Client, parts map[string][]int32) {
	_, generation := cl.GroupMetadata()
	for _, p := range parts[c.cfg.topic] {
		scope := guard.Scope{Group: c.cfg.group, Topic: c.cfg.topic, Partition: p}
		pre, err := bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", scope.Group, scope.Topic, p),
			// The default horizon (1 h): Kafka's record timestamps let the pre-check vouch for
			// messages within it; older ones take the LWT path.
			bloom.WithExpectedItems(100_000), bloom.WithFalsePositiveRate(0.001))
		if err == nil {
			err = c.guard.Own(ctx, scope, uint64(generation), pre)
		}
		if err != nil {
			fmt.Fprintf(c.out, "%s: partition %d stays on the LWT path: %v\n", c.cfg.name, p, err)
			continue
		}
		c.mu.Lock()
		c.owned[p] = pre
		c.mu.Unlock()
	}
}

// revoked turns the fast path off before the partitions can reach another member.
func (c *consumer) revoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	for _, p := range parts[c.cfg.topic] {
		c.guard.Disown(guard.Scope{Group: c.cfg.group, Topic: c.cfg.topic, Partition: p})
		c.mu.Lock()
		delete(c.owned, p)
		c.mu.Unlock()
	}
}

// pause waits d, or returns ctx's error if ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
