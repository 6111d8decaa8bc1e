// Command histories runs the library's clients against a Cassandra cluster under a seeded
// nemesis, records every operation's invocation and completion, and checks the history: the
// idempotency record of each key for linearizability (Porcupine), and set checks over the
// whole run. `make test-histories` runs it on three nodes started by scripts/cluster/cluster.sh;
// docs/verification.md describes the method.
//
//	histories run -hosts H -seeds 1,2,3 -time 60s -mutants nofence,... -out out
//	histories client ...   (a client process; the run starts them)
//	histories plan -seed 1 -time 60s   (print a seed's schedule)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: histories run|client|plan [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runAll(os.Args[2:])
	case "client":
		err = runClient(os.Args[2:])
	case "plan":
		err = printPlan(os.Args[2:])
	default:
		err = fmt.Errorf("histories: unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// printPlan prints the schedule a seed gives, as JSON lines: a run with the same seed and
// options carries out the same faults in the same order.
func printPlan(args []string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	seed := fs.Uint64("seed", 1, "seed")
	length := fs.Duration("time", time.Minute, "run length")
	clients := fs.Int("clients", 3, "client processes")
	nodes := fs.Int("nodes", 3, "nodes (0: no node faults)")
	lease := fs.Duration("lease", 3*time.Second, "lease as the server judges it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range plan(*seed, planOptions{length: *length, clients: *clients, nodes: *nodes, lease: *lease}) {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}
