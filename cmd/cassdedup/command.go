package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cmd/internal/connect"
	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/schema"
)

// command is one subcommand: its words ("key get"), its positional arguments and its work.
type command struct {
	name    string
	args    []string // the names of the positional arguments, all required
	summary string
	// flags defines the subcommand's own flags; run reads them through the closure.
	flags func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
	// offline commands need no connection.
	offline bool
	// timeout, when set, replaces the default of -timeout: schema changes wait for every node.
	timeout time.Duration
}

// commands lists every subcommand, in the order usage shows them.
var commands = []*command{
	schemaApplyCommand, schemaPrintCommand, schemaStatusCommand,
	keyGetCommand, keyReleaseCommand, keyPurgeCommand, keysStuckCommand,
	messageGetCommand, messageReleaseCommand, messagePurgeCommand, messagesListCommand, messagesStuckCommand,
	countersUnappliedCommand, countersRepairCommand, counterTotalCommand, counterRollupCommand, counterLagCommand,
	outboxPendingCommand, outboxReplayCommand, outboxParkedCommand, outboxUnparkCommand, outboxDiscardCommand,
	ownersListCommand, ownersForgetCommand,
	clockOffsetCommand,
}

// lookup finds the command named by the first one or two words of args.
func lookup(args []string) (*command, []string) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c, args[len(words):]
		}
	}
	return nil, nil
}

// group returns the commands whose first word is word ("schema": apply, print, status).
func group(word string) []*command {
	var out []*command
	for _, c := range commands {
		if first, _, _ := strings.Cut(c.name, " "); first == word {
			out = append(out, c)
		}
	}
	return out
}

// usage lists cmds, or every command when none is given.
func usage(w io.Writer, cmds ...*command) {
	if len(cmds) == 0 {
		cmds = commands
	}
	fmt.Fprintln(w, "usage: cassdedup COMMAND [ARGS] [FLAGS]   (cassdedup COMMAND -h for its flags)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.synopsis(), c.summary)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nexit status: 0 done, 1 failed, 2 usage")
}

// env is what a running command works with.
type env struct {
	in             input
	stdout, stderr io.Writer
	conn           connect.Config
	keyspace       string
	json           bool
	cluster        *gocql.ClusterConfig
	session        *gocql.Session
}

// consistencies are the connection's, as -consistency, -serial and -local-dc chose them; the
// stores a command builds use them too.
func (e *env) consistencies() (gocql.Consistency, gocql.SerialConsistency) {
	return e.cluster.Consistency, e.cluster.SerialConsistency
}

// execute parses the command's flags and arguments, connects unless offline, and runs it.
func (c *command) execute(ctx context.Context, args []string, in input, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{in: in, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("cassdedup "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if !c.offline {
		e.conn.Register(fs, getenv)
	}
	fs.StringVar(&e.keyspace, "keyspace", schema.DefaultKeyspace, "keyspace of the tables")
	fs.BoolVar(&e.json, "json", false, "print JSON instead of a table")
	runFn := c.flags(fs)
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(stdout, fs)
		return exitOK
	}
	if err == nil && len(pos) != len(c.args) {
		err = fmt.Errorf("%s takes %d arguments (%s), got %d", c.name, len(c.args), strings.Join(c.args, " "), len(pos))
	}
	if err != nil {
		c.help(stderr, fs)
		return errorf(stderr, exitUsage, "%s: %v", c.name, err)
	}
	if c.timeout > 0 && !isSet(fs, "timeout") {
		e.conn.Timeout = c.timeout
	}
	if err := schema.ValidateIdentifier(e.keyspace); err != nil {
		return errorf(stderr, exitUsage, "%s: -keyspace: %v", c.name, err)
	}
	if !c.offline {
		if e.cluster, err = e.conn.Cluster(); err != nil {
			return errorf(stderr, exitUsage, "%s: %v", c.name, err)
		}
		if e.conn.InsecureSkipVerify {
			fmt.Fprintln(stderr, "cassdedup: warning: TLS certificates are not verified (-tls-insecure-skip-verify)")
		}
		if e.session, err = e.cluster.CreateSession(); err != nil {
			return errorf(stderr, exitFailure, "%s: connect to %s: %v", c.name, e.conn.Hosts, err)
		}
		defer e.session.Close()
	}
	if err := runFn(ctx, e, pos); err != nil {
		return errorf(stderr, exitCode(err), "%s: %v", c.name, err)
	}
	return exitOK
}

func (c *command) help(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: cassdedup %s [FLAGS]\n\n%s\n\nflags:\n", c.synopsis(), c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// synopsis is the command's words and arguments.
func (c *command) synopsis() string {
	return strings.Join(append(strings.Fields(c.name), c.args...), " ")
}

// parseInterleaved parses flags that come before, between or after the positional arguments;
// everything after "--" is positional, so a key may start with a dash.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (dropping it) or at the first non-flag argument.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageErrors are the library's errors that mean the input was wrong, not the cluster.
var usageErrors = []error{
	connect.ErrUsage, errUsage, schema.ErrInvalidIdentifier, schema.ErrInvalidReplication, schema.ErrReplicationUnavailable,
	lwt.ErrInvalidKey, lwt.ErrInvalidOption, lwt.ErrInvalidArgument,
	guard.ErrInvalidMessage, guard.ErrInvalidOption, events.ErrInvalidCounter, events.ErrInvalidOption,
	counters.ErrInvalidCounter, counters.ErrInvalidOpID, counters.ErrInvalidOption,
	outbox.ErrInvalidOption, outbox.ErrLayoutMismatch,
}

// errUsage marks a command's own argument errors.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errStalled) || errors.Is(err, errClockOff) {
		return exitStalled
	}
	for _, u := range usageErrors {
		if errors.Is(err, u) {
			return exitUsage
		}
	}
	return exitFailure
}

// errorf prints an error on one line. Errors may echo input (an id, a flag's value, a node's
// message quoting a statement), so the line is escaped like every table cell.
func errorf(w io.Writer, code int, format string, args ...any) int {
	fmt.Fprintln(w, "cassdedup: "+escapeText(fmt.Sprintf(format, args...)))
	return code
}

func joinArgs(args []string, n int) string {
	return strings.Join(args[:min(n, len(args))], " ")
}
