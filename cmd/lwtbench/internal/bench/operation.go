package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
)

// Operation is one kind of request the benchmark measures. The runner calls Setup once, before
// the warm-up, then Do from many workers at once; an Operation must be safe for that. If an
// Operation also implements io.Closer, Close is called once after the last phase (stop any
// goroutine or cache the operation started there).
type Operation interface {
	// Name is the short name used in -ops, the table, the JSON and the chart.
	Name() string
	// Setup prepares what Do needs before any request is timed, such as the rows a duplicate
	// is a duplicate of. It is not timed.
	Setup(ctx context.Context) error
	// Do performs one request and returns its error unchanged (the runner classifies timeouts).
	// A request that completes but does not behave as the operation expects (a "new" key that
	// already existed, a duplicate that was applied) must return an error: it is counted.
	Do(ctx context.Context, req Request) error
}

// Batched is implemented by an Operation whose request carries many messages (a consumer's
// poll): its results are reported per message too, beside the per-request ones.
type Batched interface {
	PerRequest() int
}

// Request identifies one request of a run. (Phase, Worker, Seq) is unique within the run, so
// Key gives every request of an operation its own key.
type Request struct {
	Phase  int // index of the phase in the run, warm-up included
	Worker int // index of the worker within the phase
	Seq    int // the worker's request number for this operation within the phase, from 0
}

// Key returns a key unique to this request within the run. Operations scope it by their own
// namespace (see Env.Namespace), so each operation has its own key space.
func (r Request) Key() string { return fmt.Sprintf("p%d-w%d-s%d", r.Phase, r.Worker, r.Seq) }

// Env is what an operation is built from: the session and the settings of the run.
type Env struct {
	Session     *gocql.Session
	Keyspace    string                  // validated CQL identifier; the schema is applied to it
	RunID       string                  // unique per run
	Consistency gocql.Consistency       // for plain writes and the commit phase of an LWT
	Serial      gocql.SerialConsistency // for the Paxos phase of an LWT
	MaxWorkers  int                     // the largest number of concurrent workers of any phase
	BatchSize   int                     // messages per request of an operation that batches them
	// WorkerSpans holds, for each worker index below MaxWorkers, the total length of the phases
	// (warm-up included) that run a worker of that index: how long it may send requests, so an
	// operation can size per-worker state for the run.
	WorkerSpans []time.Duration
	// Peers holds the other stores' connections of a -peers run (peers.go); empty otherwise.
	Peers PeerStores
	// RequestTimeout bounds one request of an operation whose client has no timeout of its own.
	RequestTimeout time.Duration
}

// Namespace returns the namespace an operation named op writes its keys under: unique to the
// run and the operation, so operations never see each other's keys or an earlier run's.
func (e Env) Namespace(op string) string { return "lwtbench/" + e.RunID + "/" + op }

// Spec registers an operation: its name, what it measures, and how to build it.
type Spec struct {
	Name        string
	Description string
	New         func(env Env) (Operation, error)
	// Server is the server the operation talks to in a -peers run, whose phases measure one
	// server at a time: empty for the run's Cassandra cluster, else a PeerStores name.
	Server string
	// Baseline is the plain write of the operation's own store, its ratios' denominator;
	// empty: Baseline (Cassandra's plain INSERT).
	Baseline string
}

// Baseline is the operation every ratio is taken against: the plain INSERT, the floor.
const Baseline = "insert"

// Catalog lists every operation the benchmark knows, in the order they are reported: the CQL
// statements the executor is built from (ops_cql.go), then the toolkit's own operations on the
// same run's keyspace (ops_once.go, ops_guard.go, ops_bloom.go):
//
//   - "once-new":       lwt's exactly-once executor on new keys (claim, run, complete);
//   - "once-commit-new": the same with lwt.WithRepeatableFunction (run, then one conditional
//     insert), and "once-commit-outbox" the same staging one outbox event (ops_once_commit.go);
//   - "once-dup-node":  the same executor on a completed key, answered by the node (cache off);
//   - "once-new-outbox": once-new whose run stages one outbox event (ops_outbox.go);
//   - "once-dup-cache": the same executor on a completed key, answered from its in-process cache;
//   - "guard":          events' consumer guard on new messages;
//   - "guard-batch":    the same guard's ProcessBatch on a poll of new messages;
//   - "guard-batch-bloom": the same on owned scopes, where a poll of new messages takes the
//     fast path (one plain write per partition group);
//   - "bloom":          the same guard on owned scopes, where a warm Bloom pre-check that has
//     never seen a message lets it skip the LWT (the fast path);
//   - "http-bare", "http-new", "http-dup": a POST over loopback HTTP to a trivial handler, bare
//     and behind httpidem's Idempotency-Key middleware on new and on completed keys (ops_http.go).
//
// Another operation plugs in by appending a Spec.
// An entry's New builds the operation from Env (session, keyspace, consistency levels, a
// run-unique namespace per operation); its Setup pre-inserts or warms what it needs untimed.
func Catalog() []Spec {
	return []Spec{
		{Name: Baseline, Description: "plain INSERT on new keys (the floor)", New: newPlainInsert},
		{Name: "lwt-new", Description: "INSERT ... IF NOT EXISTS on new keys (applied)", New: newLWTInsert},
		{Name: "lwt-dup", Description: "INSERT ... IF NOT EXISTS on an existing key (rejected)", New: newLWTDuplicate},
		{Name: "once-new", Description: "lwt ExecuteOnce on new keys (claim, run, store the result)", New: newOnceNew},
		{Name: "once-commit-new", Description: "lwt ExecuteOnce with WithRepeatableFunction on new keys (run, then one conditional insert)",
			New: newOnceCommitNew},
		{Name: "once-commit-outbox", Description: "the same, the function staging one outbox event (its intent is a plain write before the insert)",
			New: newOnceCommitOutbox},
		{Name: "once-dup-node", Description: "lwt ExecuteOnce on a completed key, replayed by the node (no cache)", New: newOnceDupNode},
		{Name: "once-new-outbox", Description: "lwt ExecuteOnce on new keys staging one outbox event (intent row, event in the completion)", New: newOnceNewOutbox},
		{Name: "once-dup-cache", Description: "lwt ExecuteOnce on a completed key, replayed from the in-process cache", New: newOnceDupCache},
		{Name: "guard", Description: "events Guard.Process on new messages, handler does nothing", New: newGuardProcess},
		{Name: "guard-batch", Description: "events Guard.ProcessBatch on one poll of new messages of one broker partition (-batch-size), " +
			"handler does nothing; msg/s counts messages", New: newGuardBatch},
		{Name: "guard-batch-bloom", Description: "the same on owned scopes with warm Bloom pre-checks: one plain write per poll's " +
			"partition group, no Paxos round (safe only when one process owns the scope); msg/s counts messages", New: newGuardBatchBloom},
		{Name: "bloom", Description: "events Guard.Process on new messages of an owned scope: Bloom fast path, plain writes, no LWT " +
			"(safe only when one process owns the scope)", New: newBloomFastPath},
		{Name: "http-bare", Description: "POST over loopback HTTP to a trivial handler, no middleware (the round trip)", New: newHTTPBare},
		{Name: "http-new", Description: "the same POST through httpidem's Idempotency-Key middleware, new keys", New: newHTTPNew},
		{Name: "http-dup", Description: "the same POST through httpidem's middleware on a completed key, replayed by the node (no cache)", New: newHTTPDup},
	}
}

// OpNames returns the names of the operations in catalog, in order.
func OpNames(catalog []Spec) []string {
	names := make([]string, len(catalog))
	for i, s := range catalog {
		names[i] = s.Name
	}
	return names
}
