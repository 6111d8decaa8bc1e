package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
)

// counterFlags are the settings of the counters store that must match the application's.
type counterFlags struct {
	retention time.Duration
	shards    int
	bucket    time.Duration
}

func (c *counterFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.retention, "retention", 7*24*time.Hour, "the store's retention (counters.WithRetention)")
	fs.IntVar(&c.shards, "shards", counters.DefaultShards, "the store's index shards (counters.WithShards)")
	fs.DurationVar(&c.bucket, "index-bucket", counters.DefaultIndexBucket, "the store's index bucket (counters.WithIndexBucket)")
}

func (e *env) counters(c *counterFlags) (*counters.Store, error) {
	cl, serial := e.consistencies()
	return counters.New(e.session, counters.WithKeyspace(e.keyspace), counters.WithConsistency(cl),
		counters.WithSerialConsistency(serial), counters.WithRetention(c.retention), counters.WithShards(c.shards),
		counters.WithIndexBucket(c.bucket))
}

// claimView is an unconfirmed counter operation as printed.
type claimView struct {
	Counter   string    `json:"counter"`
	OpID      string    `json:"op_id"`
	Delta     int64     `json:"delta"`
	ClaimedAt time.Time `json:"claimed_at"`
	Owner     string    `json:"owner"`
	Settling  bool      `json:"settling"`
}

var countersUnappliedCommand = &command{
	name:    "counters unapplied",
	summary: "list counter operations claimed but never confirmed (the crash window), for counters repair",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf counterFlags
		cf.register(fs)
		settle := fs.Duration("settle", time.Minute, "leave out claims younger than this (increments still in flight)")
		return listed(fs, 24*time.Hour, "list claims made from this long ago", 100, "claims", func(ctx context.Context, e *env, _ []string, l *listing) error {
			s, err := e.counters(&cf)
			if err != nil {
				return err
			}
			now := time.Now()
			claims, err := s.ListUnapplied(ctx, l.from(now), now.Add(-*settle), l.limit)
			if err != nil {
				return err
			}
			out := make([]claimView, len(claims))
			for i, c := range claims {
				out[i] = claimView{c.Counter, c.OpID, c.Delta, c.ClaimedAt.UTC(), c.Owner.String(), c.Settling}
			}
			return e.emit(map[string]any{"unapplied": out}, func(w io.Writer) {
				if len(out) == 0 {
					fmt.Fprintf(w, "no unconfirmed operations claimed between %s and %s\n", stamp(l.from(now)), stamp(now.Add(-*settle)))
					return
				}
				row(w, "COUNTER", "OP ID", "DELTA", "CLAIMED AT", "STATE", "OWNER")
				for _, c := range out {
					state := "claimed"
					if c.Settling {
						state = "settling (a repair took it and did not finish)"
					}
					row(w, display(c.Counter), display(c.OpID), c.Delta, stampRel(c.ClaimedAt, now), state, c.Owner)
				}
			})
		})
	},
}

var countersRepairCommand = &command{
	name: "counters repair", args: []string{"COUNTER", "OP_ID"},
	summary: "settle an unconfirmed operation: -outcome applied (only mark it) or missing (increment, then mark)",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var cf counterFlags
		cf.register(fs)
		outcome := fs.String("outcome", "", "what your own records say: applied (the counter was incremented) or missing (it was not); required")
		resettle := fs.Bool("resettle", false, "settle a claim an earlier repair took and did not finish (state settling); only when that repair has ended")
		var wf writeFlags
		wf.register(fs)
		return func(ctx context.Context, e *env, args []string) error {
			var incremented bool
			switch *outcome {
			case "applied":
				incremented = true
			case "missing":
			default:
				return fmt.Errorf("%w: -outcome must be applied or missing, from evidence outside the store (your records, or the event log in shadow mode)", errUsage)
			}
			s, err := e.counters(&cf)
			if err != nil {
				return err
			}
			var opts []counters.SettleOption
			if *resettle {
				opts = append(opts, counters.ResettleStuck())
			}
			c, err := s.Unsettled(ctx, args[0], args[1], opts...)
			if err != nil {
				return err
			}
			what := display(c.Counter) + " " + display(c.OpID)
			then, risk := "mark it applied, without incrementing the counter",
				fmt.Sprintf("if the counter did not receive the increment of %d, it is lost", c.Delta)
			if !incremented {
				then, risk = fmt.Sprintf("increment the counter by %d, then mark it applied", c.Delta),
					fmt.Sprintf("if the counter did receive the increment of %d, it counts it twice", c.Delta)
			}
			goOn, err := e.plan(&wf, []string{"will settle " + what + ": claimed at " + stamp(c.ClaimedAt) + ", delta " + fmt.Sprint(c.Delta), "then: " + then},
				risk+": settle only on evidence from your own records")
			if err != nil || !goOn {
				if err == nil && e.json {
					return e.emit(map[string]any{"counter": c.Counter, "op_id": c.OpID, "delta": c.Delta, "outcome": *outcome, "dry_run": true, "would": then}, nil)
				}
				return err
			}
			if c, err = s.Settle(ctx, args[0], args[1], incremented, opts...); err != nil {
				return err
			}
			done := "marked applied (the counter already held the increment)"
			if !incremented {
				done = fmt.Sprintf("incremented by %d and marked applied", c.Delta)
			}
			return e.emit(map[string]any{"counter": c.Counter, "op_id": c.OpID, "delta": c.Delta, "outcome": *outcome, "done": done},
				func(w io.Writer) {
					row(w, "settled", display(c.Counter)+" "+display(c.OpID))
					row(w, "claimed", stamp(c.ClaimedAt))
					row(w, "done", done)
				})
		}
	},
}

// logFlags are the settings of the event log that must match the application's.
type logFlags struct {
	width, grace, settle, retention time.Duration
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&l.width, "bucket-width", events.DefaultWindow, "the log's window width (events.WithBucketWidth)")
	fs.DurationVar(&l.grace, "grace", events.DefaultGracePeriod, "the log's grace period (events.WithGracePeriod)")
	fs.DurationVar(&l.settle, "settle", events.DefaultSettleTime, "the log's settle time (events.WithSettleTime)")
	fs.DurationVar(&l.retention, "retention", events.DefaultLogRetention, "the log's retention (events.WithLogRetention)")
}

func (e *env) log(l *logFlags, extra ...events.Option) (*events.Log, error) {
	cl, serial := e.consistencies()
	return events.NewLog(e.session, append([]events.Option{events.WithKeyspace(e.keyspace), events.WithConsistency(cl),
		events.WithSerialConsistency(serial), events.WithBucketWidth(l.width), events.WithGracePeriod(l.grace),
		events.WithSettleTime(l.settle), events.WithLogRetention(l.retention)}, extra...)...)
}

// logCommand is a command on one event-log counter: the log flags (and the write flags of a
// command that writes), then act on the Log they configure.
func logCommand(name, summary string, writes bool, act func(ctx context.Context, e *env, l *events.Log, counter string, wf *writeFlags) error) *command {
	return &command{
		name: name, args: []string{"COUNTER"}, summary: summary,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var lf logFlags
			lf.register(fs)
			var wf writeFlags
			if writes {
				wf.register(fs)
			}
			return func(ctx context.Context, e *env, args []string) error {
				l, err := e.log(&lf)
				if err != nil {
					return err
				}
				return act(ctx, e, l, args[0], &wf)
			}
		},
	}
}

var counterTotalCommand = logCommand("counter total",
	"read an event-log counter's total: its rollup plus the buckets not folded yet", false,
	func(ctx context.Context, e *env, l *events.Log, counter string, _ *writeFlags) error {
		total, err := l.Total(ctx, counter)
		if err != nil {
			return err
		}
		return e.emit(map[string]any{"counter": counter, "total": total}, func(w io.Writer) {
			row(w, "COUNTER", "TOTAL")
			row(w, display(counter), total)
		})
	})

var counterRollupCommand = logCommand("counter rollup",
	"fold an event-log counter's closed buckets into its rollup (exactly once, safe beside running rollups)", true, rollup)

// rollup prints what folding counter will do, and folds it unless -dry-run. No confirmation:
// a fold is exactly once and changes no total a reader sees.
func rollup(ctx context.Context, e *env, l *events.Log, counter string, wf *writeFlags) error {
	p, err := l.PlanRollup(ctx, counter)
	if err != nil {
		return err
	}
	lines := []string{fmt.Sprintf("will fold %d closed bucket(s) of %s: watermark to %s, rolled-up total %d", p.Folded, display(counter), stamp(p.Watermark), p.Total)}
	if p.Folded == 0 {
		lines = []string{fmt.Sprintf("nothing to fold in %s: watermark %s, rolled-up total %d", display(counter), stamp(p.Watermark), p.Total)}
	}
	goOn, err := e.plan(wf, lines, "")
	if !goOn {
		if err == nil && e.json {
			return e.emit(map[string]any{"counter": counter, "watermark": tptr(p.Watermark), "total": p.Total, "folded": p.Folded, "dry_run": true}, nil)
		}
		return err
	}
	r, err := l.Rollup(ctx, counter)
	if err != nil {
		return err
	}
	return e.emit(map[string]any{"counter": counter, "watermark": tptr(r.Watermark), "total": r.Total, "folded": r.Folded},
		func(w io.Writer) {
			row(w, "COUNTER", "WATERMARK", "ROLLED-UP TOTAL", "BUCKETS FOLDED NOW")
			row(w, display(counter), stamp(r.Watermark), r.Total, r.Folded)
		})
}

// errStalled marks a rollup further behind than the operator's limit: exit status 3, so a
// probe tells it from a failure to read (1).
var errStalled = errors.New("rollup stalled")

var counterLagCommand = &command{
	name: "counter lag", args: []string{"COUNTER"},
	summary: "show how far an event-log counter's rollup is behind; exit 3 when past -max-lag",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var lf logFlags
		lf.register(fs)
		maxLag := fs.Duration("max-lag", defaultMaxLag, "exit 3 when the rollup is further behind than this; "+
			"at most half -retention (events.WithMaxRollupLag), so a stall is told long before unfolded rows expire")
		return func(ctx context.Context, e *env, args []string) error {
			if *maxLag <= 0 {
				return fmt.Errorf("%w: -max-lag must be positive", errUsage)
			}
			limit := *maxLag
			if !isSet(fs, "max-lag") && lf.retention >= events.MinLogRetention && limit > lf.retention/2 {
				limit = lf.retention / 2
				fmt.Fprintf(e.stderr, "cassdedup: -max-lag is %v, half -retention %v (its default, %v, is more)\n", limit, lf.retention, defaultMaxLag)
			}
			// The log checks the limit as WithMaxRollupLag: a lag allowed past half the retention
			// would answer "ok" for a counter whose unfolded rows may expire before anyone is told.
			l, err := e.log(&lf, events.WithMaxRollupLag(limit))
			if errors.Is(err, events.ErrInvalidOption) && isSet(fs, "max-lag") {
				return fmt.Errorf("%w: -max-lag %v with -retention %v: %w", errUsage, limit, lf.retention, err)
			}
			if err != nil {
				return err
			}
			return lag(ctx, e, l, args[0], lf.retention, limit)
		}
	},
}

// defaultMaxLag is counter lag's -max-lag when none is given and -retention allows it.
const defaultMaxLag = time.Hour

// lag prints a counter's rollup lag (what Rollup would find now, nothing written) and fails
// with errStalled past maxLag.
func lag(ctx context.Context, e *env, l *events.Log, counter string, retention, maxLag time.Duration) error {
	p, err := l.PlanRollup(ctx, counter)
	if err != nil {
		return err
	}
	now := time.Now()
	since := now.Add(-p.Lag)
	state, stalled := "ok", p.Lag > maxLag
	if stalled {
		state = fmt.Sprintf("STALLED: past -max-lag %v; unfolded rows expire from %s", maxLag, stamp(since.Add(retention)))
	}
	err = e.emit(map[string]any{"counter": counter, "watermark": tptr(p.Watermark), "lag_seconds": p.Lag.Seconds(),
		"unfolded_windows": p.Folded, "max_lag_seconds": maxLag.Seconds(), "stalled": stalled,
		"expires_from": tptr(since.Add(retention))},
		func(w io.Writer) {
			row(w, "COUNTER", "WATERMARK", "LAG", "CLOSED WINDOWS UNFOLDED", "STATE")
			row(w, display(counter), stamp(p.Watermark), p.Lag.Round(time.Millisecond), p.Folded, state)
		})
	if err == nil && stalled {
		err = fmt.Errorf("%w: %s is %v behind (limit %v): see the runbook entry \"a stalled rollup\" (docs/operating.md)",
			errStalled, display(counter), p.Lag.Round(time.Second), maxLag)
	}
	return err
}
