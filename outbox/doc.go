// Package outbox is a transactional outbox on Cassandra: call [Outbox.Stage] (an [Outbox] comes
// from [New]) inside a run, and run a relay ([NewRelay], [Relay.Run]) that publishes what
// committed. Events staged by an operation that runs under lwt.Store.ExecuteOnce (or an httpidem
// handler, or a handler of guard.Guard.Process) are committed in the same conditional write that
// completes the operation, or not at all, and the relay publishes the committed ones to a broker
// at least once, each with a stable id that the consumer dedups on.
//
// # Staging
//
//	store, _ := lwt.NewStore(session, outbox.Table("cassdedup"))
//	box, _ := outbox.New(session)
//	store.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
//		// ... the business write ...
//		if err := box.Stage(ctx, outbox.Event{Type: "order.placed", Key: orderID, Payload: body}); err != nil {
//			return nil, err
//		}
//		return result, nil
//	})
//
// Cassandra has no multi-partition transaction, but the lightweight transaction that sets an
// idempotency record COMPLETED is one, and a conditional write must stay in one partition. An
// idempotency_keys partition is one row, so the events are one cell of that row (the outbox
// column, lwt's completion columns): written by the conditional update that stores the result,
// conditioned on the claim's owner and fence, nulled by every new claim. So:
//   - a run that returns an error (released), a permanent failure (FAILED), or loses its lease
//     (its completion fails its condition) writes no events;
//   - a replay does not run the function, so it stages nothing new;
//   - the events of a committed run expire with its record (the retention, 24 h by default).
//
// Each event's id is EventID(namespace, key, sequence): an operation commits once per record, so
// the id names one event, and every publication of it carries the same id.
//
// # Staging from a consumer guard's handler
//
// A consumer that reacts to a message by publishing another event (a saga step) stages it from
// its guard.Guard.Process handler, on a guard built with
// guard.WithCompletionColumns(ColumnName): the events ride in the outbox column of the
// message's processed_messages row, written by the conditional update that marks the message
// processed. A failed handler (released), a poison message (FAILED) or a run fenced off writes
// none; a redelivery of a processed message does not run the handler. The intent names the
// guard's table (its record column) and carries the message's scope as its namespace,
// GuardNamespace(group, topic, partition), and the message id as its key, so the relay settles
// it by that row and the ids are EventID(GuardNamespace(...), id, sequence). Two paths of the
// guard have no conditional write of their own to ride on, so they stage nothing: the fast
// path (a guard with completion columns refuses Own, so every message takes the LWT path) and
// ProcessBatch (its records complete in one conditional batch per partition without per-message
// cells; Stage fails with ErrNoCompletion and the message is left for redelivery).
//
// # Finding committed events without scanning
//
// The first Stage of a run writes an intent row, before the commit, in outbox_intents under
// (bucket, shard): the staging time truncated to the bucket width (1 min) and xxhash(namespace,
// key) mod the shard count (16). A relay never scans the record table; it reads, per shard it
// holds, the few partitions of recent buckets and settles each pending intent by reading its
// record: COMPLETED by the intent's owner and fence → publish, then mark PUBLISHED; RELEASED,
// FAILED, another claim or no record → the run can never commit (every completion is
// conditioned on the claim's owner and fence, and the record is gone only once it expired) →
// mark DROPPED; STARTED by the intent's claim → look again later. A QUORUM read that shows the
// commit is final (a completed record never changes); any other answer is read again at SERIAL,
// which completes a completion still in flight, before it counts.
//
// Why no committed event is missed. Every committed run has an intent (Stage writes it before it
// adds an event, and a run whose intent write failed has its completion refused: ErrNoIntent).
// A relay keeps a cursor per shard: the first bucket not yet swept (frontier) and the swept
// buckets that still hold pending intents. A bucket is swept for the last time once it ended
// more than the horizon (1 min) ago; a bucket with pending intents stays in the cursor until they
// settle. An intent can land in a bucket after its last sweep only if its write took longer than
// the horizon after the staging clock read the time: Stage fails a write that took more than
// half the horizon (ErrIntentLate), so that holds while stagers' and relays' clocks differ by
// less than half the horizon. The cursor is written by a conditional update fenced on the
// relay's lease; an older cursor (a lost write) only makes a relay read again.
//
// # Relays share shards under fenced leases
//
// A shard's lease is an lwt record in outbox_relays (claimed, renewed, expired by Cassandra's
// clock and taken over with the fence incremented, as lwt does for any claim). Before a relay
// marks in a bucket partition it raises the partition's static relay_fence to its own fence,
// and every mark is a conditional batch on relay_fence = its fence; so once a successor has
// worked a partition, the marks of a relay frozen past its lease fail their condition
// (ErrFenced), and so does its cursor. A relay also stops before publishing when its lease has
// run out by its own clock. Marks are idempotent facts (what was published, or a run that can
// no longer commit), so a stale relay's mark that does apply is still true.
//
// # At least once, in order per operation
//
// A crash between publishing and marking publishes the same messages again, with the same ids:
// the Publisher must not report success before the broker has durably accepted them (for Kafka:
// an idempotent producer with acks=all), and the consumer dedups by id (guard.Guard with the id
// as message id makes its effect exactly once). Events of one operation are published together,
// in staging order. Across operations there is no order guarantee, on the same event key either:
// two operations of one key may sit in different shards held by different relays, and a
// republication repeats older events after newer ones. A consumer that needs order across
// operations must carry a version in the payload.
//
// # Sizes
//
// An intents partition holds rate × bucket / shards rows and stops growing when its minute ends:
// 375, 3,750 and 37,500 rows at 100, 1k and 10k staging operations per second with the defaults.
// A relay reads per shard the open buckets (two with the defaults) first, then its pending ones,
// then up to 60 closed buckets from its frontier, 8 reads at a time; a relay that starts afresh
// sweeps back one retention that way. Events of one run are limited to 100 and about 256 KiB:
// they ride in one Paxos round.
//
// # Limits
//
// The record must be an operation's in the outbox's records table (namespace and key strings,
// as httpidem and ExecuteOnce write them; a namespace starting with NUL is reserved for
// messages) or a message of a consumer guard's table, in the outbox's keyspace: a relay reads no
// other, so Stage refuses them (ErrUnsupportedKey). lwt's fast path has no conditional write to
// ride on, so Stage there is ErrNoRun. Admin.Replay replays operations' events, not messages'.
// After an operator's lwt ReleaseKey of a completed key, the next run's events reuse the ids of
// the released run's (the operation is the same); a consumer that already applied them drops them.
// An intent that stays pending past its record's retention (no relay ran for a day) is dropped
// with its record: keep a relay running, and watch the cassdedup command's `outbox pending`.
//
// # Concurrency
//
// Outbox and Relay are safe for concurrent use. Neither starts a goroutine of its own: Relay.Run
// blocks its caller until ctx ends, and a pass reads records with a few goroutines that end
// before it returns.
package outbox
