// Package lwt runs an operation exactly once per key on Cassandra: build a [Store] with [NewStore]
// over a record table ([IdempotencyKeys]) and call [Store.ExecuteOnce](ctx, key, fn); every retry
// with the key gets fn's stored result instead of a second run.
//
// The package is one record state machine, every transition a lightweight transaction (LWT),
// applied in three ways, each a section below:
//
//   - the single-record executor: [NewStore] and [Store.ExecuteOnce] ([Execute] is the typed
//     form), and [Store.Begin], Complete, Fail and Release for callers that cannot wrap their
//     work in a function;
//   - the batch store: [NewBatchStore], then [BatchStore.BeginBatch] and FinishBatch claim and
//     end many records of one partition with one conditional batch, one Paxos round, each;
//   - the operator API: [Store.Inspect], ReleaseKey, Delete, Scan and [Store.ScanStuck], the
//     fenced repairs and bounded scans that the cassdedup command runs.
//
// They stay in one package because they share the state machine's decisions, transitions,
// claims and records, and the store's configuration; under them sit the conditional-write
// primitives that every package of the module uses.
//
// # Primitives
//
// InsertIfNotExists, UpdateIf and ExecCAS run one conditional statement, sent exactly once (not
// idempotent, no retry policy, no speculative execution), and return whether it applied plus the
// row Cassandra returned when it did not. A timeout after which the write may or may not have
// applied is an *OutcomeUnknownError; ReadSerial reads at SERIAL or LOCAL_SERIAL to learn the
// truth.
//
// # The single-record executor: Store.ExecuteOnce
//
// Store.ExecuteOnce(ctx, key, fn) claims the key with INSERT ... IF NOT EXISTS, runs fn, stores
// its result and returns it; every later call with the key gets the stored result flagged as a
// replay, until the record expires (the retention, 24h by default). One round trip answers a
// duplicate: the rejected claim returns the stored record. Execute is the typed form.
//
// The record is a state machine (STARTED → COMPLETED, FAILED or RELEASED) in which every
// transition is an LWT conditioned on the claim's random owner id and its fencing token:
//   - a claim holds a lease, renewed while fn runs; a claim whose lease passed (a crashed
//     worker) is taken over with the fence incremented, and the old owner's later writes fail
//     with ErrLeaseLost instead of overwriting;
//   - an error from fn releases the claim (RELEASED, attempts kept) so a retry runs fn again;
//     an error marked with Permanent is stored and replayed, as an API replays a cached 4xx;
//   - a duplicate that meets a live claim gets ErrInProgress, or waits with WithWait;
//   - the same key with a different request (WithRequest) is ErrKeyReuse and nothing runs;
//   - a write whose response was lost is resolved by a serial read of the owner id (Resolve,
//     the one resolver every conditional write of the module uses); if that read fails too,
//     ErrOutcomeUnknown is returned, never a guess. Once fn has returned, its result is read
//     back and sent again with backoff for the whole commit budget, with the lease still
//     renewed, before that error is given;
//   - every write of a record computes its TTL from the record's one expiry, so no cell
//     outlives the others.
//
// A table may declare CompletionColumns: cells that the function adds through
// CompletionFromContext(ctx) and that are written by the same conditional update that stores
// its result, or not at all (a failed, released or fenced-off run writes none; a new claim nulls
// them). Package outbox carries a run's events that way; this package knows nothing of events.
//
// Store.Begin, Complete, Fail, Release and Renew expose the same state machine to callers
// that cannot wrap their work in a function, such as a message consumer guard over the
// processed_messages table (see Table).
//
// # What is guaranteed, and what is not
//
// Within the retention window, at most one call's fn result is stored for a key, and every
// caller that gets a result gets that one. fn itself runs once per key as long as leases hold:
// if a worker stalls past its lease (a long GC pause, a partition), another worker takes over
// and fn may run a second time, though only one result can be stored. Pass
// ClaimFromContext(ctx).Fence to downstream systems that can reject stale writers to close that
// gap. A claim whose outcome stayed unknown, or whose caller's ctx ended mid-claim, blocks the
// key until its lease passes. After the record expires the key runs again.
//
// Leases are judged by Cassandra's clock: the lease is a pair of cells with the lease's own TTL,
// and a takeover is conditioned on them being gone. A caller whose clock runs two leases ahead
// cannot take over a live claim, and one whose clock runs behind loses its claim when the server
// ends its lease and another worker takes the key (TestLeaseJudgedByServerClock). Only the
// store's other judgements (record expiry in the cache, the wait between polls) use the
// caller's clock (WithClock).
//
// What the tests prove against a real node: one run per key under 64 goroutines on the same
// keys (TestExecuteOnceConcurrent); unknown outcomes of claims and completions resolved without
// a second run, including a completion whose response and two confirming reads were lost
// (TestUnknownOutcome*); a stalled owner fenced off after a takeover (TestCrashedWorkerTakenOver,
// TestLeaseLostCancelsFunction). What durability the record itself has depends on the
// cluster's replication, consistency and commitlog settings: see the durability section below.
//
// # Durability
//
// A guarantee is only as durable as the record that carries it. Cassandra acknowledges a write
// once it is in the commitlog of enough replicas; with commitlog_sync: periodic (the default,
// fsynced every 10 s) a crashed machine forgets up to 10 s of acknowledged writes and a crashed
// Cassandra process about the last 100 ms. A completed record lost that way lets a retry run fn
// again. What each guarantee needs, and what a crash loses:
//
//	guarantee                    replication, consistency               commitlog
//	no acknowledged result lost  RF 3, QUORUM commits (LOCAL_QUORUM     any at RF 3; group or batch
//	                             per datacenter)                        at RF 1 or when every
//	                                                                    replica can crash at once
//	no second run                the same, SERIAL claims (LOCAL_SERIAL  as above
//	                             only for keys written from one
//	                             datacenter), leases longer than any
//	                             stall, the fencing token downstream
//	unknown outcomes resolved    a quorum for the serial read (RF 3     as above
//	                             answers with one replica down)
//
//	what crashes                 periodic                               group or batch
//	one replica of RF 3, or a    nothing acknowledged is lost from      nothing
//	minority, at QUORUM          the cluster
//	every replica at once, or    the last ~100 ms (process crash) to    nothing acknowledged
//	the one node at RF 1         10 s (machine crash); each lost
//	                             result runs fn again on retry
//
// The crash tests (make test-faults) measured it on one node: a SIGKILL lost up to 12 of about
// 600 acknowledged results under periodic, each of which ran fn again on retry, and none under
// group. docs/durability.md has the full tables and what to do when fn's own downstream write
// fails ambiguously: make it idempotent under the same key, fence it with
// ClaimFromContext(ctx).Fence, or return Permanent(err) so the failure is stored and replayed.
//
// # The fast path, and when it is safe
//
// Off by default. Store.Own(ctx, Key{namespace}, epoch, pre, src) declares that every call for
// the namespace reaches this process (a sticky router assigned it at epoch) and warms pre, a
// PreCheck (*bloom.PreCheck satisfies it; this package does not import bloom), from src. A key
// pre then answers "clearly new" runs fn without a claim and is
// recorded with PutCompleted, a plain write of the COMPLETED record carrying the epoch; "maybe
// seen" takes the LWT path. A second call of a key while it runs in this process gets
// ErrInProgress (or waits, with WithWait). If Disown (or a newer Own) came while fn ran, the
// record is written with PutCompletedIfNotExists and a record found there wins. Errors from fn on
// the fast path store nothing, permanent ones included: the next call runs fn on the LWT path.
//
// The pre-check vouches only for its horizon (PreCheck.Retention). A call whose own time
// (WithTime) is older than the horizon less MaxClockSkew takes the LWT path; so does a call
// without a time, unless the horizon covers the retention plus the commit timeout. A key first
// run at T had a time of at least T less the skew, so a key the pre-check may be asked about is
// one it admitted, or loaded, less than one horizon ago: it cannot have been forgotten. Own
// refuses a horizon too short to vouch for anything. A table whose partitions group a scope's
// records by their time can take the fast path's record in one write that is also its index
// (WithRecorder; package events records messages so); the other callers use Enter and Pass to
// write many records at once.
//
// The caller supplies the warm-up's key source: idempotency_keys is keyed by (namespace, key)
// alone and has no index by namespace, and writing one on every claim would tax the strict path
// that most callers use; a sticky router already knows (or logs) the keys it routed. The source
// must yield every key of the namespace written within the horizon plus MaxClockSkew (within
// the retention, when calls carry no time), or a retry of a key it misses runs fn again.
//
// It is exact only while ownership holds. When two processes serve one namespace with the fast
// path on, a key sent to both runs in both: package events measured a duplicate rate of 100%
// for messages delivered to two owners (TestFastPathOwnershipViolatedDuplicates).
//
// # The batch store: BatchStore
//
// NewBatchStore runs the same state machine on a BatchTable, a table whose partitions each hold
// many records. BeginBatch claims the records of one partition with one conditional batch and
// settles each blocked one from the rows the rejection returns (replay, key reuse, in progress,
// takeover), FinishBatch ends them with another, each statement fenced by its claim's owner and
// fence, and RenewBatch renews their leases. Cassandra applies a conditional batch on one
// partition in one Paxos round, so n records cost one LWT, not n; MaxBatchRows bounds a batch.
// Package events' Guard.ProcessBatch is built on it.
//
// # The operator API
//
// Store.Inspect reads a record with the node's remaining TTL. Store.ReleaseKey and Store.Delete
// are the operator's repairs of one key (the next call runs the operation again, or as a new
// key); each is a lightweight transaction fenced on the record it read and refuses a live
// lease unless Force is given. Store.ScanStuck finds claims STARTED past their lease and keys
// RELEASED many times with a paged scan of token ranges, a few at a time, at a bounded rate.
// The cassdedup command does the same from a shell.
//
// # Concurrency
//
// A Store is safe for concurrent use. It starts no goroutine of its own; ExecuteOnce starts one
// to renew the lease and stops it before returning. Observers are called synchronously.
package lwt
