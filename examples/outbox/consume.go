package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/outbox/kafkapub"
)

// consume reads the topic as one member of group and applies each partition's records of a poll
// with one ProcessPoll (batched claims, one RecordBatch of their effects, batched ends), keyed by
// the event id, committing offsets only once every record
// was processed or found a duplicate.
func (c *chain) consume(ctx context.Context, topic, group string, g *guard.Guard, logc *events.Log) error {
	opts := []kgo.Opt{kgo.SeedBrokers(c.cfg.brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if c.cfg.instance != "" {
		opts = append(opts, kgo.InstanceID(c.cfg.instance))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.CloseAllowingRebalance()
	// apply is the effect of a poll's claimed messages: each order's amount on an event-log
	// counter, under the event's id, all recorded with one RecordBatch, so a consumer that
	// catches up pays Paxos rounds per poll and window, not per order.
	apply := func(ctx context.Context, msgs []guard.Message) []error {
		errs := make([]error, len(msgs))
		orders := make([]order, len(msgs))
		evs := make([]events.Event, 0, len(msgs))
		for i, m := range msgs {
			if errs[i] = json.Unmarshal(m.Payload, &orders[i]); errs[i] == nil {
				evs = append(evs, events.Event{Counter: c.counter, ID: m.ID, Delta: orders[i].Amount, Time: m.Time})
			}
		}
		if err := logc.RecordBatch(ctx, evs); err != nil {
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
		now := time.Now()
		c.mu.Lock()
		for i, o := range orders {
			if errs[i] != nil {
				continue
			}
			c.runs[o.ID]++
			if _, ok := c.applied[o.ID]; !ok {
				c.applied[o.ID] = now
			}
		}
		c.mu.Unlock()
		if c.report != nil {
			for i, o := range orders {
				if errs[i] == nil {
					c.report.say(Line{Event: "applied", Order: o.ID})
				}
			}
		}
		return errs
	}
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, 500)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		// Fetch errors (an unreachable broker, a lost group session, a reset after data loss) are
		// reported, and the client kept: it reconnects and rejoins by itself, while a new client
		// is a new group member, and after a broker restart the group waited for the old
		// member's session to time out (45 s by default) before it assigned partitions again.
		// The records the poll returned are processed as usual, offsets committed only after
		// the guard.
		var ferr error
		fetches.EachError(func(t string, p int32, err error) { ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d: %w", t, p, err)) })
		if ferr != nil {
			if c.report != nil {
				c.report.say(Line{Event: "consumer-error", Err: ferr.Error()})
			}
			if fetches.NumRecords() == 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		}
		var perr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if perr == nil && len(p.Records) > 0 {
				perr = c.process(ctx, group, p.Records, g, apply)
			}
		})
		if perr != nil {
			return perr
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		cl.AllowRebalance()
	}
	return nil
}

// process delivers records until each is processed or a duplicate.
func (c *chain) process(ctx context.Context, group string, records []*kgo.Record, g *guard.Guard, apply guard.PollHandler) error {
	c.consumed.Add(int64(len(records)))
	if c.report != nil {
		c.report.say(Line{Event: "consumed", N: len(records)})
	}
	msgs := make([]guard.Message, 0, len(records))
	for _, r := range records {
		m := guard.Message{Scope: guard.Scope{Group: group, Topic: r.Topic, Partition: r.Partition}, Payload: r.Value, Time: r.Timestamp}
		for _, h := range r.Headers {
			if h.Key == kafkapub.IDHeader {
				m.ID = string(h.Value)
			}
		}
		if m.ID == "" {
			return fmt.Errorf("%w: %s/%d@%d", errNoID, r.Topic, r.Partition, r.Offset)
		}
		msgs = append(msgs, m)
	}
	for len(msgs) > 0 && ctx.Err() == nil {
		res, err := g.ProcessPoll(ctx, msgs, apply)
		if err != nil {
			return err
		}
		var again []guard.Message
		for i, r := range res {
			if r.Outcome != guard.Processed && r.Outcome != guard.Duplicate {
				again = append(again, msgs[i])
			}
		}
		msgs = again
		if len(msgs) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
