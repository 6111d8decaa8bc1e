// Package lwt makes an operation take effect exactly once with Cassandra lightweight
// transactions: conditional-write primitives that decode CAS results safely and resolve
// outcome-unknown errors, and an exactly-once executor over the idempotency_keys table.
package lwt
