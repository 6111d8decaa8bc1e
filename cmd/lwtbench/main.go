// Command lwtbench measures what exactly-once costs on a Cassandra cluster: the latency and
// throughput of conditional writes, of lwt's exactly-once executor (new keys, duplicates
// answered by the node or the in-process cache) and of events' consumer guard, on its LWT path
// and on its Bloom fast path for an owned scope, relative to a plain INSERT, interleaved in one
// run, in a closed-loop concurrency sweep and an open-loop fixed-rate phase; with -peers, beside
// the same operations on Postgres and Redis. Run it with -h for its operations and flags.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cassdedup/cassdedup/cmd/lwtbench/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := bench.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lwtbench:", err)
		os.Exit(bench.ExitCode(err))
	}
}
