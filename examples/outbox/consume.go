package main

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/outbox/kafkasub"
)

// consume reads the topic as one member of group until ctx ends: kafkasub runs each partition's
// records of a poll through the batched guard, keyed by the event id, and commits offsets only
// past records that were processed or found duplicates.
func (c *chain) consume(ctx context.Context, topic, group string, guard *events.Guard, logc *events.Log) error {
	kopts := []kgo.Opt{kgo.SeedBrokers(c.cfg.brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
	if c.cfg.instance != "" {
		kopts = append(kopts, kgo.InstanceID(c.cfg.instance))
	}
	consumer, err := kafkasub.New(guard, func(ctx context.Context, m events.Message) error {
		var o order
		if err := json.Unmarshal(m.Payload, &o); err != nil {
			return err
		}
		// The effect: the order's amount on an event-log counter, under the event's id.
		if err := logc.Record(ctx, events.Event{Counter: c.counter, ID: m.ID, Delta: o.Amount, Time: m.Time}); err != nil {
			return err
		}
		c.sawApplied(o.ID)
		return nil
	}, kafkasub.WithClient(kopts...), kafkasub.WithMessage(c.sawRecord))
	if err != nil {
		return err
	}
	return consumer.Run(ctx)
}

// sawRecord counts a delivered record and reads it as the default does.
func (c *chain) sawRecord(group string, r *kgo.Record) (events.Message, error) {
	c.consumed.Add(1)
	if c.report != nil {
		c.report.say(Line{Event: "consumed", N: 1})
	}
	return kafkasub.Message(group, r)
}

// sawApplied records an order's effect for the run's summary and report.
func (c *chain) sawApplied(id string) {
	c.mu.Lock()
	c.runs[id]++
	if _, ok := c.applied[id]; !ok {
		c.applied[id] = time.Now()
	}
	c.mu.Unlock()
	if c.report != nil {
		c.report.say(Line{Event: "applied", Order: id})
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
