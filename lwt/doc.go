// Package lwt runs an operation exactly once per key on Cassandra: build a [Store] with [NewStore]
// over a record table ([IdempotencyKeys]) and call [Store.ExecuteOnce]; every retry with the key
// gets fn's stored result instead of a second run.
//
//	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
//	...
//	res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey(tenant, r.Header.Get("Idempotency-Key")),
//		func(ctx context.Context) ([]byte, error) {
//			return charge(ctx, lwt.ClaimFromContext(ctx).Fence) // runs once per key
//		}, lwt.WithRequest(body))
//	// res.Value is the stored result; res.Replay is true for every call after the first.
//
// [Execute] is the typed form. A duplicate that meets a live claim gets [ErrInProgress] (or waits,
// with [WithWait]); the key with another request is [ErrKeyReuse]; an error marked with
// [Permanent] is stored and replayed, any other releases the claim so a retry runs fn again; a
// write whose outcome cannot be learnt is [ErrOutcomeUnknown], never a guess.
// [WithRepeatableFunction] is for a function whose only effects are its result and completion
// cells: it runs first and one conditional insert commits both (one Paxos round, not two); the
// function may run more than once, its commit never happens twice.
//
// The record is a state machine in which every transition is a lightweight transaction fenced
// by the claim's owner and token. The package applies it three ways:
//
//   - the single-record executor: [Store.ExecuteOnce], [Execute], and [Store.Begin], Complete,
//     Fail and Release for callers that cannot wrap their work in a function, with the
//     fast path of an owned scope ([Store.Own], [WithOwnership]);
//   - the batch store: [NewBatchStore], then [BatchStore.BeginBatch] and FinishBatch claim and
//     end many records of one partition with one Paxos round each;
//   - the operator API: [Store.Inspect], ReleaseKey, Delete, Scan and [Store.ScanStuck], the
//     fenced repairs and bounded scans that the cassdedup command runs.
//
// # For packages built on lwt
//
// Some names are a seam for packages that build a store of their own on lwt's state machine
// (package guard, the consumer guard, is the one in this module); a service that calls
// ExecuteOnce, Execute or Begin meets none of them:
//
//   - the batch store ([BatchStore], [NewBatchStore], [BatchTable], [BatchItem], [BatchEnd],
//     [Begun], [MaxBatchRows]), in the files batch_*.go;
//   - the fast path's admission of one key without ExecuteOnce ([Store.Enter], [Pass]) and the
//     placement of a timed call's record ([Recorder], [RecordWrite], [WithRecorder]);
//   - the contexts such a store runs its work and writes in ([ContextWithClaim],
//     [DeadlineContext]) and the checks its options share with lwt's ([OwnershipProblem],
//     [WriteRequestTimeoutProblem]).
//
// All but the batch store are in seam.go. The observation port (Observer, Observation,
// ObserveCAS, Key, which users meet too) is below this package, in lwt/observe, with aliases
// here, so that stores beside lwt (events, counters) report to the same Observer without
// importing the state machine.
//
// The conditional writes under them (sent once, their unknown outcomes settled by a serial
// read) are package [github.com/cassdedup/cassdedup/lwt/cas], which the module's other
// packages use too.
//
// # Concurrency
//
// A Store and a BatchStore are safe for concurrent use. A Store starts no goroutine of its own;
// ExecuteOnce starts one to renew the lease and stops it before returning. Observers are
// called synchronously on the caller's goroutine and must be safe for concurrent use.
//
// # Design
//
// The design is in the repository's docs:
//
//   - docs/executor.md: the state machine, what is guaranteed and what is not (leases judged
//     by Cassandra's clock, fencing), completion columns, the fast path of Store.Own, the
//     batch store and the operator API;
//   - docs/durability.md: which replication, consistency and commitlog each guarantee needs,
//     and what the crash tests measured;
//   - docs/fastpath.md: the Bloom fast path, its horizon and why it is exact;
//   - docs/benchmarks.md: what each call costs, with the commands that measured it;
//   - docs/operating.md: the recommended session, the schema, the cassdedup command, metrics.
package lwt
