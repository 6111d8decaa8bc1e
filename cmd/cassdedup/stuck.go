package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// scanFlags are the flags of a stuck-claim scan.
type scanFlags struct {
	opts        lwt.StuckOptions
	consistency string
	listing
}

func (s *scanFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.opts.MinAttempts, "min-attempts", lwt.DefaultStuckAttempts, "a RELEASED record claimed this many times counts as stuck")
	fs.IntVar(&s.opts.Splits, "splits", lwt.DefaultScanSplits, "token ranges the ring is cut into")
	fs.IntVar(&s.opts.Parallelism, "parallel", lwt.DefaultScanParallelism, "token ranges read at once")
	fs.IntVar(&s.opts.PageSize, "page-size", lwt.DefaultScanPageSize, "rows per request")
	fs.IntVar(&s.opts.RowsPerSecond, "rate", lwt.DefaultScanRate, "rows read per second at most, over the whole scan (-1: no limit)")
	fs.StringVar(&s.consistency, "scan-consistency", "", "consistency of the range reads, e.g. LOCAL_ONE (default: -consistency)")
	s.listing.register(fs, 0, "", 1000, "stuck records")
}

func (s *scanFlags) options(fs *flag.FlagSet) (lwt.StuckOptions, error) {
	o := s.opts
	if err := s.check(fs); err != nil {
		return o, err
	}
	if s.consistency != "" {
		cl, err := gocql.ParseConsistencyWrapper(strings.ToUpper(s.consistency))
		if err != nil {
			return o, fmt.Errorf("%w: -scan-consistency %q", errUsage, s.consistency)
		}
		o.Consistency = cl
	}
	return o, nil
}

// stuckView is one stuck record as printed.
type stuckView struct {
	Key        []any      `json:"key"`
	Reason     string     `json:"reason"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	Fence      int64      `json:"fence"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
}

// scanner registers the flags that name what to scan and returns the scan.
type scanner func(fs *flag.FlagSet) func(ctx context.Context, e *env, o lwt.StuckOptions, yield func(lwt.StuckClaim) error) (lwt.ScanStats, error)

func stuckCommand(name, what string, resolve scanner) *command {
	return &command{name: name,
		summary: "find " + what + " STARTED past their lease or RELEASED many times (a paged, token-range-parallel scan at a bounded rate)",
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var sf scanFlags
			sf.register(fs)
			scan := resolve(fs)
			return func(ctx context.Context, e *env, _ []string) error {
				opts, err := sf.options(fs)
				if err != nil {
					return err
				}
				var found []stuckView
				start := time.Now()
				stats, err := scan(ctx, e, opts, collect(&sf.listing, &found, func(c lwt.StuckClaim) stuckView {
					v := stuckView{Key: c.Key, Reason: string(c.Reason), Status: string(c.Record.Status),
						Attempts: c.Record.Attempts, Fence: c.Record.Fence, UpdatedAt: tptr(c.Record.UpdatedAt)}
					if c.Record.Status == lwt.StatusStarted {
						v.LeaseUntil = tptr(c.Record.LeaseUntil)
					}
					return v
				}))
				truncated, err := ended(err)
				if err != nil {
					return err
				}
				elapsed := time.Since(start)
				summary := fmt.Sprintf("scanned %d records in %d token ranges (%d requests) in %s: %d stuck", stats.Rows, stats.Ranges, stats.Pages,
					elapsed.Round(time.Millisecond), len(found))
				if truncated {
					summary += fmt.Sprintf(" (stopped at -limit %d)", sf.limit)
				}
				now := time.Now()
				return e.emit(map[string]any{"stuck": found, "truncated": truncated, "scan": map[string]any{
					"ranges": stats.Ranges, "requests": stats.Pages, "rows": stats.Rows, "seconds": elapsed.Seconds()}},
					func(w io.Writer) {
						if len(found) > 0 {
							row(w, "KEY", "REASON", "STATUS", "ATTEMPTS", "FENCE", "LEASE UNTIL", "UPDATED")
						}
						for _, s := range found {
							row(w, keyText(s.Key), s.Reason, s.Status, s.Attempts, s.Fence, relTime(s.LeaseUntil, now), relTime(s.UpdatedAt, now))
						}
						fmt.Fprintln(w, summary)
					})
			}
		}}
}

func relTime(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return stampRel(*t, now)
}

var (
	keysStuckCommand = stuckCommand("keys stuck", "keys", func(fs *flag.FlagSet) func(context.Context, *env, lwt.StuckOptions, func(lwt.StuckClaim) error) (lwt.ScanStats, error) {
		table := fs.String("table", "idempotency_keys", "the lwt record table (keyed by namespace and key)")
		return func(ctx context.Context, e *env, o lwt.StuckOptions, yield func(lwt.StuckClaim) error) (lwt.ScanStats, error) {
			s, err := e.store(*table)
			if err != nil {
				return lwt.ScanStats{}, err
			}
			return s.ScanStuck(ctx, o, yield)
		}
	})
	messagesStuckCommand = stuckCommand("messages stuck", "messages", func(fs *flag.FlagSet) func(context.Context, *env, lwt.StuckOptions, func(lwt.StuckClaim) error) (lwt.ScanStats, error) {
		var gf guardFlags
		gf.register(fs)
		return func(ctx context.Context, e *env, o lwt.StuckOptions, yield func(lwt.StuckClaim) error) (lwt.ScanStats, error) {
			g, err := e.guard(&gf)
			if err != nil {
				return lwt.ScanStats{}, err
			}
			return g.ScanStuck(ctx, o, yield)
		}
	})
)
