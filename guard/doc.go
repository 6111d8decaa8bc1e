// Package guard runs an at-least-once consumer's handler once per message id, and a Guard is
// safe for concurrent use by many goroutines and processes: build one with [New] and call
// [Guard.Process] for each delivery, or [Guard.ProcessBatch] for the messages of a poll.
//
//	g, err := guard.New(session, guard.WithMaxAttempts(5))
//	if err != nil {
//		return err
//	}
//	out, err := g.Process(ctx, m, func(ctx context.Context, m guard.Message) error {
//		return apply(ctx, m.Payload) // an error leaves the message for redelivery
//	})
//	switch {
//	case errors.Is(err, guard.ErrPoison):
//		deadLetter(m) // its handler attempts are used up; acknowledge it
//	case err == nil:
//		ack(m) // out is Processed (the handler ran now) or Duplicate (it ran before)
//	}
//
// A [Message] is named by its [Scope] (consumer group, topic, broker partition) and its ID, the
// same on every redelivery; its Time, set once by the producer, lets a poll's claims share
// partitions. Process claims the message with a lightweight transaction and a lease (package
// lwt), runs the handler, and marks the message processed only if the handler succeeded.
// Concurrent deliveries run the handler once; the others get Duplicate, or InProgress (error
// lwt.ErrInProgress) while the first runs. ProcessBatch claims the messages of a poll that share
// a partition with one conditional batch: two Paxos rounds per group of up to 100 messages.
// [Guard.ProcessPoll] does the same with one call of a [PollHandler] for the whole poll, so the
// poll's effects can be written together (one events.Log.RecordBatch: a consumer that catches
// up pays a few Paxos rounds per poll, not one per message); [ByKey] runs the handlers of
// different keys concurrently, each key's messages in order.
//
// [Guard.Own] turns on the Bloom fast path for a scope this process owns (one consumer per
// broker partition): a message its pre-check knows to be new runs without a claim and is
// recorded with one plain write. It is exact only while ownership holds; call [Guard.Disown] on
// revocation. [Guard.Inspect], [Guard.ReleaseMessage], [Guard.DeleteMessage], [Guard.ScanStuck]
// and [Guard.ListMessages] are the operator's view of the records.
//
// # What an adapter must check
//
// A message is found by its scope and ID, and, in ProcessBatch and the fast path's horizon, by
// its Time: every delivery and every copy of one message must carry the same three, or the
// copies are two messages and both run. An adapter for a broker takes the id from the message
// itself (a header its producer set once), and the time from the producer too: on Kafka a record
// timestamp of type CreateTime, never LogAppendTime (the broker stamps each append, so two
// copies get two times), or a time the message carries (the outbox's staging time). It refuses
// a message whose time it cannot vouch for, loudly, as kafka/kafkasub does (kafkasub.ErrBrokerTime
// through its poison hook and its log), checks its consumer group with [ValidateGroup] before it
// consumes anything (the guard refuses every message of a group it cannot name), and
// dead-letters a message the guard refuses as invalid rather than redelivering it forever.
//
// Options are typed to [New]: each validates its value, and a bad one fails New with an error
// that names it and wraps [ErrInvalidOption].
//
// The design is in the repository's docs: docs/guard.md (claims, layouts, batched claims),
// docs/fastpath.md (the fast path, its horizon and when it is not exact), docs/sizing.md
// (partition sizes, the layouts of a consumer group) and docs/benchmarks.md (what each path
// costs).
package guard
