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
// phase. Errors and timeouts are counted per operation, never dropped.
//
// Operations are registered in Catalog (operations.go). Run is safe to call from several
// goroutines with distinct configurations; an Operation must be safe for concurrent use by the
// workers of a phase.
package bench
