package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// input is where a command reads the answer to a confirmation.
type input struct {
	r io.Reader
	// terminal says r is a terminal, where someone can answer; otherwise only -yes confirms.
	terminal bool
}

// stdinInput is the process's standard input.
func stdinInput() input {
	fi, err := os.Stdin.Stat()
	return input{r: os.Stdin, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

// writeFlags are the flags of every command that writes: -dry-run prints what it would do and
// changes nothing, -yes confirms a risky change without a prompt.
type writeFlags struct{ dryRun, yes bool }

func (w *writeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&w.dryRun, "dry-run", false, "print what would be done, and change nothing")
	fs.BoolVar(&w.yes, "yes", false, "confirm a change whose next retry runs the operation again, without a prompt (needed when stdin is not a terminal)")
}

var (
	// errNotConfirmed is a risky change with no terminal to ask and no -yes: a usage error.
	errNotConfirmed = fmt.Errorf("%w: not confirmed", errUsage)
	// errDeclined is a risky change the operator answered no to.
	errDeclined = errors.New("declined: nothing written")
)

// plan prints what a command will do (on stdout, or on stderr with -json so stdout stays one
// JSON document) and reports whether to go on: not for a dry run, and for a risky change only
// once confirmed, with -yes or at a y/N prompt on a terminal. risk says why the change needs a
// confirmation; empty when it does not.
func (e *env) plan(w *writeFlags, lines []string, risk string) (bool, error) {
	out := e.stdout
	if e.json {
		out = e.stderr
	}
	for _, l := range lines {
		fmt.Fprintln(out, escapeText(l))
	}
	if risk != "" {
		fmt.Fprintln(out, "warning: "+escapeText(risk))
	}
	switch {
	case w.dryRun:
		fmt.Fprintln(out, "dry run: nothing written")
		return false, nil
	case risk == "" || w.yes:
		return true, nil
	case !e.in.terminal:
		return false, fmt.Errorf("%w: %s; nothing written: pass -yes to confirm (stdin is not a terminal to ask on)", errNotConfirmed, risk)
	}
	fmt.Fprint(e.stderr, "proceed? [y/N] ")
	answer, _ := bufio.NewReader(e.in.r).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return true, nil
	}
	return false, errDeclined
}

// planned is the plan-then-confirm rule for a write made by a call with a dry-run switch:
// write(true) reads what the write would touch, describe says it as the plan's line, and
// write(false) runs only once plan says to go on. It returns the last result, and whether it
// was written (false for a dry run).
func planned[T any](e *env, wf *writeFlags, write func(dry bool) (T, error), describe func(T) string, risk string) (T, bool, error) {
	res, err := write(true)
	if err != nil {
		return res, false, err
	}
	goOn, err := e.plan(wf, []string{describe(res)}, risk)
	if err != nil || !goOn {
		return res, false, err
	}
	res, err = write(false)
	return res, err == nil, err
}
