package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// listing is the -since and -limit of the commands that list: their flags, their check, and
// the collecting of items up to the limit.
type listing struct {
	since time.Duration // 0 when the command has no -since
	limit int
}

// register adds -limit, and -since when since is positive; what names the listed items.
func (l *listing) register(fs *flag.FlagSet, since time.Duration, sinceUsage string, limit int, what string) {
	if since > 0 {
		fs.DurationVar(&l.since, "since", since, sinceUsage)
	}
	fs.IntVar(&l.limit, "limit", limit, "stop after this many "+what)
}

// check refuses a -limit or -since that is not positive, before anything is read.
func (l *listing) check(fs *flag.FlagSet) error {
	hasSince := fs.Lookup("since") != nil
	switch {
	case hasSince && (l.limit < 1 || l.since <= 0):
		return fmt.Errorf("%w: -limit %d and -since %v must be positive", errUsage, l.limit, l.since)
	case l.limit < 1:
		return fmt.Errorf("%w: -limit %d must be positive", errUsage, l.limit)
	}
	return nil
}

// from is the start of the listing's span: -since before now.
func (l *listing) from(now time.Time) time.Time { return now.Add(-l.since) }

// errEnough stops a listing that reached -limit.
var errEnough = errors.New("enough")

// collect returns the callback of a listing: it appends each item's view to *out and stops the
// listing once -limit items are in.
func collect[T, V any](l *listing, out *[]V, view func(T) V) func(T) error {
	return func(item T) error {
		*out = append(*out, view(item))
		if len(*out) >= l.limit {
			return errEnough
		}
		return nil
	}
}

// ended reads a listing's error: truncated when it stopped at -limit, else the error, if any.
func ended(err error) (truncated bool, _ error) {
	if errors.Is(err, errEnough) {
		return true, nil
	}
	return false, err
}

// stopped is the note under a truncated table.
func (l *listing) stopped(w io.Writer, truncated bool) {
	if truncated {
		fmt.Fprintf(w, "(stopped at -limit %d)\n", l.limit)
	}
}

// listed is the scaffolding of a listing command: it registers the listing's flags (see
// register) and refuses bad values before run reads anything.
func listed(fs *flag.FlagSet, since time.Duration, sinceUsage string, limit int, what string, run func(ctx context.Context, e *env, args []string, l *listing) error) func(context.Context, *env, []string) error {
	var l listing
	l.register(fs, since, sinceUsage, limit, what)
	return func(ctx context.Context, e *env, args []string) error {
		if err := l.check(fs); err != nil {
			return err
		}
		return run(ctx, e, args, &l)
	}
}
