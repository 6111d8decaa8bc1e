package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cassdedup/cassdedup/outbox"
)

// outboxFlags are the layout of the outbox tables, which must match the stagers' and relays'.
// Zero takes the layout stored with the intents; a value that differs from it is refused.
type outboxFlags struct {
	shards          int
	bucket          time.Duration
	relay           string
	intents, relays string
	arrivals        string
}

func (f *outboxFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.shards, "shards", 0, "the outbox's shard count; 0 takes the one stored with the intents (a different one is refused)")
	fs.DurationVar(&f.bucket, "bucket", 0, "the outbox's bucket width; 0 takes the one stored with the intents (a different one is refused)")
	fs.StringVar(&f.relay, "relay", outbox.DefaultRelayName, "the relay group whose shard cursors to read")
	fs.StringVar(&f.intents, "intents-table", outbox.DefaultIntentsTable, "the outbox's intents table (outbox.WithTables)")
	fs.StringVar(&f.relays, "relays-table", outbox.DefaultRelaysTable, "the outbox's relays table (outbox.WithTables)")
	fs.StringVar(&f.arrivals, "arrivals-table", outbox.DefaultArrivalsTable, "the outbox's arrivals table (outbox.WithTables)")
}

func (e *env) outboxAdmin(f *outboxFlags) (*outbox.Admin, error) {
	if f.shards < 0 || f.bucket < 0 {
		return nil, fmt.Errorf("%w: -shards and -bucket must not be negative", errUsage)
	}
	opts := []outbox.AdminOption{outbox.WithKeyspace(e.keyspace), outbox.WithRelayName(f.relay), outbox.WithTables(f.intents, f.relays, f.arrivals)}
	if f.shards > 0 {
		opts = append(opts, outbox.WithShards(f.shards))
	}
	if f.bucket > 0 {
		opts = append(opts, outbox.WithBucket(f.bucket))
	}
	a, err := outbox.NewAdmin(e.session, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return a, nil
}

// pendingView is one pending intent as outbox pending prints it.
type pendingView struct {
	Namespace string     `json:"namespace"`
	Key       string     `json:"key"`
	Record    string     `json:"record,omitempty"` // the guard's table of a message's intent
	Fence     int64      `json:"fence"`
	Verdict   string     `json:"verdict"`
	Events    int        `json:"events"`
	StagedAt  time.Time  `json:"staged_at"`
	Bucket    time.Time  `json:"bucket"`
	Shard     int        `json:"shard"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"last_error,omitempty"`
	Expires   *time.Time `json:"record_expires,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// cursorView is a shard's relay cursor as outbox pending prints it.
type cursorView struct {
	Shard     int         `json:"shard"`
	Status    string      `json:"status"`
	Fence     int64       `json:"fence"`
	LeaseLive bool        `json:"lease_live"`
	Frontier  *time.Time  `json:"frontier,omitempty"`
	Pending   []time.Time `json:"pending_buckets"`
}

var outboxPendingCommand = &command{
	name:    "outbox pending",
	summary: "list outbox intents not yet published or dropped (staged since -since, or kept by a relay's cursor) with their record's verdict and failed attempts, and the relays' shard cursors",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var of outboxFlags
		of.register(fs)
		return listed(fs, time.Hour, "read the buckets from this long ago on", 100, "intents", func(ctx context.Context, e *env, _ []string, l *listing) error {
			a, err := e.outboxAdmin(&of)
			if err != nil {
				return err
			}
			cursors, err := a.Cursors(ctx)
			if err != nil {
				return err
			}
			layout, err := a.Layout(ctx)
			if err != nil {
				return err
			}
			var out []pendingView
			truncated, err := ended(a.ListPending(ctx, l.from(time.Now()), collect(l, &out, func(p outbox.Pending) pendingView {
				v := pendingView{Namespace: p.Namespace, Key: p.Key, Record: p.Record, Fence: p.Fence, Verdict: p.Verdict, Events: p.Events,
					StagedAt: p.StagedAt.UTC(), Bucket: p.Bucket, Shard: p.Shard, Attempts: p.Attempts, LastError: p.LastError,
					Expires: tptr(p.RecordExpires)}
				if p.Err != nil {
					v.Error = p.Err.Error()
				}
				return v
			})))
			if err != nil {
				return err
			}
			cv := make([]cursorView, 0, len(cursors))
			for _, c := range cursors {
				cv = append(cv, cursorView{Shard: c.Shard, Status: c.Status, Fence: c.Fence, LeaseLive: c.LeaseLive,
					Frontier: tptr(c.Frontier), Pending: c.Pending})
			}
			now := time.Now()
			lv := map[string]any{"shards": layout.Shards, "bucket": layout.Bucket.String(), "horizon": layout.Horizon.String(),
				"key_order": layout.KeyOrder}
			return e.emit(map[string]any{"pending": out, "truncated": truncated, "shards": cv, "layout": lv}, func(w io.Writer) {
				fmt.Fprintf(w, "layout: %d shards, buckets of %v, horizon %v, key order %v\n", layout.Shards, layout.Bucket, layout.Horizon,
					onOff(layout.KeyOrder))
				row(w, "NAMESPACE", "KEY", "FENCE", "VERDICT", "EVENTS", "STAGED", "SHARD", "ATTEMPTS")
				for _, p := range out {
					verdict := p.Verdict
					if p.Error != "" {
						verdict += ": " + strconv.Quote(p.Error)
					}
					if p.LastError != "" {
						verdict += "; last error: " + strconv.Quote(p.LastError)
					}
					row(w, strconv.Quote(p.Namespace), strconv.Quote(p.Key), p.Fence, verdict, p.Events, stampRel(p.StagedAt, now), p.Shard, p.Attempts)
				}
				if len(out) == 0 {
					fmt.Fprintf(w, "no pending intents since %s\n", stamp(l.from(now)))
				}
				l.stopped(w, truncated)
				fmt.Fprintln(w)
				row(w, "SHARD", "RELAY", "FENCE", "SWEPT UP TO", "PENDING BUCKETS")
				for _, c := range cv {
					holder := "never claimed"
					switch {
					case c.Status == "STARTED" && c.LeaseLive:
						holder = "held"
					case c.Status != "":
						holder = "free (" + c.Status + ")"
					}
					row(w, c.Shard, holder, c.Fence, stampRel(deref(c.Frontier), now), len(c.Pending))
				}
			})
		})
	},
}

var outboxReplayCommand = requeueCommand("outbox replay",
	"have the relay publish a committed operation's events again, with the same ids (consumers that applied them drop them); needs -yes, or -dry-run to only show them",
	(*outbox.Admin).Replay, "replay %d events of %s %s (the relay publishes them again, with the same ids)",
	"the events reach every consumer again; consumers that applied them drop them by id",
	func(res outbox.Replayed, wrote bool) string {
		switch {
		case !wrote:
			return "would replay (dry run: nothing written)"
		case !res.Changed:
			return "already pending: the relay publishes it on its next pass"
		}
		return "replayed"
	})

// requeueCommand is a command that hands an operation's events to the relay again (replay,
// unpark): requeue is the admin's call, plan the format of its plan's line (the count of
// events, the namespace and the key), risk its warning, and action what it did.
func requeueCommand(name, summary string, requeue func(a *outbox.Admin, ctx context.Context, ns, key string, dry bool) (outbox.Replayed, error),
	plan, risk string, action func(res outbox.Replayed, wrote bool) string) *command {
	return &command{name: name, args: []string{"NAMESPACE", "KEY"}, summary: summary,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return outboxWrite(fs, func(ctx context.Context, e *env, a *outbox.Admin, wf *writeFlags, ns, key string) error {
				res, wrote, err := planned(e, wf, func(dry bool) (outbox.Replayed, error) { return requeue(a, ctx, ns, key, dry) },
					func(r outbox.Replayed) string { return fmt.Sprintf(plan, len(r.Messages), display(ns), display(key)) }, risk)
				if err != nil {
					return err
				}
				return emitEvents(e, action(res, wrote), !wrote, ns, key, res.Messages,
					map[string]any{"changed": res.Changed, "bucket": res.Bucket, "shard": res.Shard})
			})
		},
	}
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// onOff prints a layout switch such as the key order.
func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
