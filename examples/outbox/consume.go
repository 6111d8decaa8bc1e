package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
)

// consume reads the topic as one member of group until ctx ends: kafkasub applies each
// partition's records of a poll with one ProcessPoll (batched claims, one RecordBatch of their
// effects, batched ends), keyed by the event id, and commits offsets only past records that were
// processed or found duplicates.
func (c *chain) consume(ctx context.Context, topic, group string, g *guard.Guard, logc *events.Log) error {
	// A fetch waits up to 100 ms for 16 KiB of records, so that a poll carries a tenth of a
	// second of orders rather than the few of the relay's last publish: the guard's Paxos rounds
	// and the log's batched writes are per poll and partition, not per record.
	kopts := []kgo.Opt{kgo.SeedBrokers(c.cfg.brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond), kgo.FetchMinBytes(16 << 10)}
	if c.cfg.instance != "" {
		kopts = append(kopts, kgo.InstanceID(c.cfg.instance))
	}
	if c.cfg.sessionTimeout > 0 {
		kopts = append(kopts, kgo.SessionTimeout(c.cfg.sessionTimeout))
	}
	opts := []kafkasub.Option{kafkasub.WithClient(kopts...), kafkasub.WithMessage(c.sawRecord)}
	if c.cfg.fastPath {
		opts = append(opts, kafkasub.WithFastPath(func(s guard.Scope) (lwt.PreCheck, error) {
			return bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", s.Group, s.Topic, s.Partition), bloom.WithExpectedItems(1_000_000))
		}))
	}
	// apply is the effect of a partition's claimed records of a poll: each order's amount on an
	// event-log counter, under the event's id, all recorded with one RecordBatch, so a consumer
	// that catches up pays Paxos rounds per poll and window, not per order.
	consumer, err := kafkasub.NewPoll(g, func(ctx context.Context, msgs []guard.Message) []error {
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
		for i, o := range orders {
			if errs[i] == nil {
				c.sawApplied(o.ID)
			}
		}
		return errs
	}, opts...)
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}

// sawRecord counts a delivered record and reads it as the default does.
func (c *chain) sawRecord(group string, r *kgo.Record) (guard.Message, error) {
	if n := c.consumed.Add(1); c.cfg.holdAfter > 0 && n > c.cfg.holdAfter {
		// Every partition's goroutine that meets a record from here on waits with the first (a
		// Once's callers wait for its f): the crash tests freeze the process with its poll in flight.
		c.holdHere()
	}
	if c.report != nil {
		c.report.say(Line{Event: "consumed", N: 1})
	}
	return kafkasub.Message(group, r)
}

// holdHere reports "holding" and waits for a line on stdin, once; every goroutine that gets
// here meanwhile waits with the first (a Once's callers wait for its f).
func (c *chain) holdHere() {
	c.hold.Do(func() {
		c.report.say(Line{Event: "holding"})
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	})
}

// sawApplied records an order's effect for the run's summary and report.
func (c *chain) sawApplied(id string) {
	c.mu.Lock()
	c.runs[id]++
	if _, ok := c.applied[id]; !ok {
		c.applied[id] = time.Now()
	}
	n := len(c.applied)
	c.mu.Unlock()
	if c.report != nil {
		c.report.say(Line{Event: "applied", Order: id})
	}
	if c.cfg.holdAfterApplied > 0 && n > c.cfg.holdAfterApplied {
		c.holdHere() // inside the poll's handler: its effects recorded, their claims not ended
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
