// Package events replaces non-idempotent counters with an event log, and guards at-least-once
// message consumers so that each message is processed once.
//
// # Event log
//
// Log.Record stores an increment as an event row keyed by (counter, bucket, event id). The
// bucket is derived from the event's own Time, so a retry rewrites the same row: recording an
// event any number of times counts it once, with no lightweight transaction on the write path.
// Log.Rollup folds closed buckets into one total per counter, moving a watermark with an LWT
// (UPDATE ... IF watermark = ?), so racing rollup workers fold each bucket exactly once.
// Log.Total reads the rollup row and the buckets from that row's own watermark on, so its cost
// does not grow with history and a read racing a rollup neither misses nor double-counts.
//
// A bucket closes when its end plus the grace period (WithGracePeriod, default 1 h) has passed.
// Every retry of one event must be made within it: later ones fail with ErrBucketClosed instead
// of landing in a bucket a rollup may already have folded. Rollups wait a further settle time
// (WithSettleTime, default 5 min), which must exceed writers' clock skew plus a write's
// duration. An event id must always come with the same Time and Delta.
//
// # Consumer guard
//
// Guard.Process claims a message in processed_messages (an LWT with a lease, through package
// lwt), runs the handler, and marks the message processed only if the handler succeeded; a
// failure releases the claim so a redelivery runs the handler again. Concurrent deliveries of
// one message run the handler once: the others get Duplicate, or InProgress while the first
// runs. After WithMaxAttempts handler runs the message is reported as Poison, for the caller
// to dead-letter. Records live for the retention window (WithRetention, default 7 days).
// Every message is its own partition; ProcessedIDs walks the hour-bucketed by-scope index, so
// a pre-check (PreCheck, e.g. a Bloom filter) can warm up from its own scope. The guard is
// strict: the LWT runs for every message; a pre-check only learns ids.
//
// # Concurrency
//
// Log and Guard are safe for concurrent use by many goroutines and processes. Neither starts
// goroutines that outlive a call, except the lease renewal that package lwt runs while a
// handler runs; RollupEvery runs in its caller's goroutine until its ctx ends.
package events
