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
//	cassdedup counter total | rollup | lag COUNTER
//	cassdedup outbox pending
//	cassdedup outbox replay NAMESPACE KEY -dry-run | -yes
//	cassdedup outbox parked
//	cassdedup outbox unpark | discard NAMESPACE KEY -dry-run | -yes
//
// Every subcommand takes -h, the connection flags (-hosts, -port, -keyspace, -username,
// -password, -tls-*, -local-dc, -consistency, -serial, -timeout; CASSANDRA_HOSTS,
// CASSANDRA_USERNAME and CASSANDRA_PASSWORD give their defaults) and -json; flags may follow
// the arguments. Output is a table unless -json is given; tables escape every character a
// terminal would act on (control, format and bidi characters, invalid UTF-8), and show an id
// that is not plain text quoted, as a Go string; the JSON holds values exactly.
//
// Every command that writes (schema apply, key and message release and purge, counters
// repair, counter rollup, outbox replay, unpark and discard) takes -dry-run, which prints what it would do and changes nothing, and prints what
// it will do before it acts. A change whose next retry runs the operation again (releasing or
// purging a COMPLETED or FAILED record, forcing a live lease, settling a counter operation)
// needs a confirmation: a y/N prompt when stdin is a terminal, -yes otherwise; without either
// the command refuses with exit status 2 and writes nothing.
//
// Exit status: 0 done, 1 failed (the error is on stderr; also a declined prompt, and schema
// status on drift, a changed file or a newer release's migration), 2 usage (also a change not
// confirmed, and a replication the cluster cannot hold), 3 a rollup past counter lag's
// -max-lag (a stalled rollup: see docs/operating.md).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], stdinInput(), os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitStalled = 3 // counter lag: a rollup past -max-lag
)

// run runs one command line and returns its exit status. in answers confirmations; getenv
// supplies the environment's defaults of the connection flags.
func run(ctx context.Context, args []string, in input, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || isHelp(args[0]) || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil && len(group(args[0])) > 0 {
		// A group's word alone, or with -h: the group's commands.
		if len(args) == 2 && isHelp(args[1]) {
			usage(stdout, group(args[0])...)
			return exitOK
		}
		usage(stderr, group(args[0])...)
		if len(args) == 1 {
			return errorf(stderr, exitUsage, "%s needs a subcommand", args[0])
		}
	}
	if cmd == nil {
		if len(group(args[0])) == 0 {
			usage(stderr)
		}
		return errorf(stderr, exitUsage, "unknown command %q", joinArgs(args, 2))
	}
	return cmd.execute(ctx, rest, in, stdout, stderr, getenv)
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }
