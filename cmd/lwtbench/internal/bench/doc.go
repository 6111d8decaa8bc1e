// Package bench is the LWT latency benchmark behind cmd/lwtbench: it measures what making an
// operation take effect exactly once costs on a given Cassandra cluster, relative to a plain
// INSERT measured in the same run.
//
// Operation kinds are interleaved within every worker (each worker runs every selected
// operation once per cycle, in a shuffled order), so drift in the cluster, the client machine or
// the network hits them all alike and their ratios stay meaningful. Each operation owns its own
// key space, unique to the run, so "new key" operations really write new keys.
//
// A run has a warm-up phase whose results are discarded, a closed-loop sweep over concurrency
// levels (throughput and service time), and an open-loop phase at a fixed request rate where
// latency is measured from each request's intended start, so a stall shows as latency instead of
// being hidden by coordinated omission.
//
// Latency is recorded in one HdrHistogram per worker and operation, merged at the end of each
// phase. Errors and timeouts are counted per operation, never dropped. An answer that is not
// the one the operation expects (a new key replayed, a duplicate that ran) is an error too, so
// a wrong answer never passes for a fast one.
//
// The operations come in two groups. The CQL ones (insert, lwt-new, lwt-dup) are the bare
// statements: the floor and what one condition costs. The toolkit's own are what a caller
// pays: lwt's Store.ExecuteOnce on a new key (once-new: claim, run, store the result, two
// LWTs), with lwt.WithRepeatableFunction (once-commit-new: run, then one conditional insert;
// once-commit-outbox: the same staging one outbox event), on a completed key answered by the node (once-dup-node: one rejected LWT) or by the
// store's in-process cache (once-dup-cache: no round trip), and events' Guard.Process on a new
// message (guard) and on a new message of a scope the guard owns with a warm Bloom pre-check
// (bloom: the fast path, a plain write and no LWT). The fast path is exact only while one
// process owns the scope; each bloom worker is the sole consumer of its own partition, and a
// request that took the LWT path instead counts as an error, never as a fast answer. They use
// the run's consistency and serial consistency. The duplicate
// operations cycle over a pool of keys completed untimed in Setup: a completed key replays for
// its whole retention, so a pool is valid for any run length, and it matches lwt-dup's, so
// once-dup-node against lwt-dup shows what the executor adds to a rejected LWT.
//
// With -peers a run measures the toolkit's plain write, executor and outbox-staged run beside
// the same operations on Postgres and Redis (PeersCatalog, designs in internal/peers), each
// server alone in phases of its own (peers.go).
//
// Operations are registered in Catalog (operation.go); adding one is one Spec. Run is safe to call from several
// goroutines with distinct configurations; an Operation must be safe for concurrent use by the
// workers of a phase.
package bench
