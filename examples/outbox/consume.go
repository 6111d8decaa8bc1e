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

// consume reads the topic as one member of group and runs each partition's records of a poll
// through the batched guard, keyed by the event id, committing offsets only once every record
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
	handle := func(ctx context.Context, m guard.Message) error {
		var o order
		if err := json.Unmarshal(m.Payload, &o); err != nil {
			return err
		}
		// The effect: the order's amount on an event-log counter, under the event's id.
		if err := logc.Record(ctx, events.Event{Counter: c.counter, ID: m.ID, Delta: o.Amount, Time: m.Time}); err != nil {
			return err
		}
		c.mu.Lock()
		c.runs[o.ID]++
		if _, ok := c.applied[o.ID]; !ok {
			c.applied[o.ID] = time.Now()
		}
		c.mu.Unlock()
		if c.report != nil {
			c.report.say(Line{Event: "applied", Order: o.ID})
		}
		return nil
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
				perr = c.process(ctx, group, p.Records, g, handle)
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
func (c *chain) process(ctx context.Context, group string, records []*kgo.Record, g *guard.Guard, handle guard.Handler) error {
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
		res, err := g.ProcessBatch(ctx, msgs, handle)
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
