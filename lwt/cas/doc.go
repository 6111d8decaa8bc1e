// Package cas runs Cassandra's conditional writes (lightweight transactions) the one safe way:
// sent once, never retried by the driver, the result decoded without trusting its shape, and an
// unknown outcome settled by a serial read instead of guessed.
//
//	applied, existing, err := cas.InsertIfNotExists(ctx,
//		session.Query(`INSERT INTO t (k, owner) VALUES (?, ?) IF NOT EXISTS`, k, owner), gocql.Serial)
//
// InsertIfNotExists, UpdateIf and Exec run one conditional statement, ExecBatch a conditional
// batch on one partition; a write whose outcome the driver cannot report returns an
// *OutcomeUnknownError (errors.Is ErrOutcomeUnknown). ReadSerial and ReadSerialAll read at
// SERIAL or LOCAL_SERIAL, which completes any Paxos round in flight. Resolve and ResolveBatch
// combine the two: they run a Conditional (or BatchConditional) and, when its outcome is
// unknown, read the row back and decide with the caller's test.
//
// Package lwt's exactly-once executor is built on this package, and so are outbox, counters
// and events. docs/durability.md says which consistency each guarantee needs. Every function is
// safe for concurrent use; a Conditional is a value used once.
package cas
