package guard

import (
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// MaxMessageField is the longest group, topic or message id accepted, in bytes: the lwt
// store's key limit.
const MaxMessageField = lwt.DefaultMaxKeyLength

// Scope is where message ids are unique: a consumer group reading a topic, and the broker
// partition when there is one (0 otherwise).
type Scope struct {
	Group     string
	Topic     string
	Partition int32
}

// Message is one delivery of a message.
type Message struct {
	Scope
	// ID is the message's id, unique within its scope and the same on every redelivery.
	ID string
	// Payload is the message body. It is not stored; its hash detects two different messages
	// sharing an id. Nil when the caller does not want that check.
	Payload []byte
	// Time is when the message was produced, as the producer set it once with its id (Kafka:
	// the record timestamp of a topic with message.timestamp.type=CreateTime). ProcessBatch
	// groups messages by it, so it must be the same on every delivery and on every producer
	// duplicate of the message; Process ignores it.
	Time time.Time
}

// validate checks m against the guard's limits.
func (m Message) validate(maxPayload int) error {
	for _, f := range []struct{ name, v string }{{"group", m.Group}, {"topic", m.Topic}, {"id", m.ID}} {
		if err := checkField(f.name, f.v); err != nil {
			return err
		}
	}
	if m.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", ErrInvalidMessage, m.Partition)
	}
	if len(m.Payload) > maxPayload {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayloadTooLarge, len(m.Payload), maxPayload)
	}
	return nil
}

// ValidateMessage reports whether m is acceptable to a guard with the default payload limit.
// The error wraps ErrInvalidMessage or ErrPayloadTooLarge.
func ValidateMessage(m Message) error { return m.validate(DefaultMaxPayload) }

// ValidateGroup reports whether group can name a consumer group's messages, as every message's
// group is checked: the error wraps ErrInvalidMessage (empty, over MaxMessageField bytes, not
// UTF-8). An adapter that knows its group before any message (kafkasub.New) refuses a group the
// guard would refuse for every record up front.
func ValidateGroup(group string) error { return checkField("group", group) }

// checkField checks a message's group, topic or id, named what.
func checkField(what, v string) error {
	return textcheck.Check(ErrInvalidMessage, what, v, MaxMessageField)
}
