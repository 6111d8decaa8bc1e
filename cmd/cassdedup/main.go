// Command cassdedup inspects and repairs cassdedup's state in a Cassandra cluster and manages
// its schema.
//
//	cassdedup schema apply | print | status
//	cassdedup key get | release | purge NAMESPACE KEY
//	cassdedup keys stuck
//	cassdedup message get | release | purge GROUP TOPIC PARTITION ID
//	cassdedup messages list GROUP TOPIC PARTITION
//	cassdedup messages stuck
//	cassdedup counters unapplied
//	cassdedup counters repair COUNTER OP_ID -outcome applied|missing
//	cassdedup counter total | rollup COUNTER
//	cassdedup outbox pending
//	cassdedup outbox replay NAMESPACE KEY -dry-run | -yes
//
// Every subcommand takes -h, the connection flags (-hosts, -port, -keyspace, -username,
// -password, -tls-*, -local-dc, -consistency, -serial, -timeout; CASSANDRA_HOSTS,
// CASSANDRA_USERNAME and CASSANDRA_PASSWORD give their defaults) and -json; flags may follow
// the arguments. Output is a table unless -json is given. Exit status: 0 done, 1 failed (the
// error is on stderr), 2 usage.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// run runs one command line and returns its exit status. getenv supplies the environment's
// defaults of the connection flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || isHelp(args[0]) || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		usage(stderr)
		return errorf(stderr, exitUsage, "unknown command %q", joinArgs(args, 2))
	}
	return cmd.execute(ctx, rest, stdout, stderr, getenv)
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }
