package kafkasub

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/lwt"
)

// Message is the default of WithMessage: the id from the record's first header.ID, the
// record's value as the payload (its hash detects two different records sharing an id), its
// timestamp as the time (RecordTime: kafkapub sets the event's staging time, the same on every
// republication, on a topic whose message.timestamp.type is CreateTime), and the group, topic and
// partition as the scope. A record without the header gives ErrNoID; a record whose timestamp
// the broker set gives ErrBrokerTime (use WithTimeHeader on such a topic); a nil record
// lwt.ErrInvalidArgument.
func Message(group string, r *kgo.Record) (guard.Message, error) {
	return message(group, r, RecordTime)
}

// HeaderTimeMessage returns Message with the time taken from the record header named name
// (Unix milliseconds in decimal, as header.Time carries the event's staging time)
// instead of the record's timestamp, whoever set that: a record without the header, or with
// another value in it, gives ErrNoTime. WithTimeHeader makes it the consumer's; a WithMessage
// function of yours can start from it.
func HeaderTimeMessage(name string) func(group string, r *kgo.Record) (guard.Message, error) {
	return func(group string, r *kgo.Record) (guard.Message, error) {
		return message(group, r, func(r *kgo.Record) (time.Time, error) { return headerTime(r, name) })
	}
}

// message is Message with the time from timeOf.
func message(group string, r *kgo.Record, timeOf func(*kgo.Record) (time.Time, error)) (guard.Message, error) {
	if r == nil {
		return guard.Message{}, fmt.Errorf("%w: kafkasub: nil record", lwt.ErrInvalidArgument)
	}
	m := guard.Message{Scope: guard.Scope{Group: group, Topic: r.Topic, Partition: r.Partition}, Payload: r.Value}
	for _, h := range r.Headers {
		if h.Key == header.ID {
			m.ID = string(h.Value)
			break // kafkapub writes its own headers first: an event's header of that name comes after
		}
	}
	if m.ID == "" {
		return m, fmt.Errorf("%w: %s has no %s header", ErrNoID, at(r), header.ID)
	}
	t, err := timeOf(r)
	m.Time = t
	return m, err
}

// RecordTime returns r's timestamp when its producer set it (CreateTime), the time the guard may
// place r by: the same on every delivery of r and, from a producer that stamps an event once
// (kafkapub), on every copy. A timestamp the broker set when it appended r (a topic with
// message.timestamp.type=LogAppendTime) differs between two copies of one event, which the
// guard would then place apart and both run: RecordTime refuses it with ErrBrokerTime, and a
// record without a timestamp (the message format before Kafka 0.10) with ErrNoTime. A
// WithMessage function that takes the record's timestamp must take it from here.
func RecordTime(r *kgo.Record) (time.Time, error) {
	if r == nil {
		return time.Time{}, fmt.Errorf("%w: kafkasub: nil record", lwt.ErrInvalidArgument)
	}
	switch r.Attrs.TimestampType() {
	case 0:
		return r.Timestamp, nil
	case -1: // the message format before Kafka 0.10
		return time.Time{}, fmt.Errorf("%w: %s has no timestamp: take the time from the event (WithTimeHeader)", ErrNoTime, at(r))
	}
	return time.Time{}, fmt.Errorf("%w: %s: its topic's message.timestamp.type is LogAppendTime: "+
		"set it to CreateTime, or take the time from the event (WithTimeHeader)", ErrBrokerTime, at(r))
}

// headerTime returns the time in r's header named name: Unix milliseconds, in decimal,
// written as strconv.FormatInt writes them, after 1970.
func headerTime(r *kgo.Record, name string) (time.Time, error) {
	for _, h := range r.Headers {
		if h.Key != name {
			continue
		}
		ms, err := strconv.ParseInt(string(h.Value), 10, 64)
		if err != nil || ms <= 0 || strconv.FormatInt(ms, 10) != string(h.Value) {
			return time.Time{}, fmt.Errorf("%w: %s: %s %q is not Unix milliseconds", ErrNoTime, at(r), name, h.Value)
		}
		return time.UnixMilli(ms), nil
	}
	return time.Time{}, fmt.Errorf("%w: %s has no %s header", ErrNoTime, at(r), name)
}

// at names a record by its place: topic/partition@offset.
func at(r *kgo.Record) string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }
