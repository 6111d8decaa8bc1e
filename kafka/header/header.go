// Package header names the Kafka record headers of an outbox event: the contract between the
// publisher (module kafka/kafkapub), which writes them on every record, and the consumer adapter
// (module kafka/kafkasub), which reads the event's id from ID and, with WithTimeHeader(Time), its
// time from Time. It lives in the library module and imports nothing, so the consumer reads the
// names without importing the publisher (and through it the outbox), and neither the library nor
// this package requires a Kafka client.
//
// The values are part of the wire format: a record published before a release is read after it,
// so a name here never changes.
package header

// The headers every record of kafkapub carries, before the event's own headers.
const (
	ID   = "event-id"   // the event's id (outbox.Message.ID): a consumer dedups on the first one
	Type = "event-type" // the event's type (outbox.Message.Type)
	Seq  = "event-seq"  // the event's place in its operation, from 0, in decimal
	// Time is the event's staging time (outbox.Message.StagedAt) in Unix milliseconds, in
	// decimal: the record's timestamp too, but a header keeps it when the broker restamps the
	// record (a topic with message.timestamp.type=LogAppendTime).
	Time = "event-time"
)
