// Package counters makes increments of native Cassandra counters idempotent: build a [Store]
// with [New] and call [Store.Increment] with an [Op] whose ID names the increment; a retry of an
// applied one is a Duplicate. It is a dedup layer over the native counter, and it states the
// crash window that native counters leave open (package events counts without one).
//
//	store, err := counters.New(session, counters.WithKeyspace("cassdedup"))
//	out, err := store.Increment(ctx, counters.Op{Counter: "likes:post-881", ID: "like-u42", Delta: 1})
//	// out is Applied the first time, Duplicate on a retry; errors.Is(err, counters.ErrUnconfirmed)
//	// leaves the operation to `cassdedup counters unapplied` and `counters repair`.
//
// Native counter updates are not idempotent (a retried update adds twice) and cannot take
// part in a lightweight transaction. Store.Increment therefore makes three writes:
//
//  1. claim: INSERT INTO counter_ops ... IF NOT EXISTS (status CLAIMED, an owner token),
//     preceded by a plain insert into the counter_ops_by_hour index;
//  2. increment: UPDATE counter_values SET value = value + delta, sent once, never retried;
//  3. mark: UPDATE counter_ops SET status = 'APPLIED' ... IF owner = <token>.
//
// A retry whose claim finds APPLIED returns Duplicate and increments nothing.
//
// # The crash window
//
// The steps are not atomic, and nothing can make them so:
//
//   - stop after 1, before 2 (crash, timeout before sending): the claim stays CLAIMED and the
//     counter was NOT incremented. The increment is missing.
//   - stop after 2, before 3 (crash, a timed-out counter update, a failed mark): the claim
//     stays CLAIMED and the counter WAS (or, after a timeout, may have been) incremented.
//
// From the stored data the two cases look the same. A retry of either returns ErrUnconfirmed
// and increments nothing, so the layer never double-counts within the retention window; it can
// under-count. ListUnapplied lists claims that were never marked, for a repair that decides
// from other evidence (the caller's own records, or the event log in shadow mode); Settle
// applies that decision, incrementing the counter or only marking the claim. A counter
// update that failed with Unavailable certainly did not apply; its claim is released so a
// retry can apply it.
//
// The window is short but real: BenchmarkIncrement on one local node measured it open for 3.9 ms
// of each increment (the counter update and the mark), and the whole idempotent increment at 4.2
// times the cost of a bare native counter update.
//
// For counting that is exact under any failure, use the event log of package events. Shadow
// mode (WithShadow) records every increment in the event log too, before touching the native
// counter, and Drift reports how far the native value has strayed, to help a migration.
//
// # Concurrency
//
// A Store is safe for concurrent use. Concurrent increments with the same operation id
// apply it once; the others return Duplicate, or ErrUnconfirmed while the first is between
// its claim and its mark.
//
// Repairing unconfirmed operations with the command line: docs/operating.md.
package counters
