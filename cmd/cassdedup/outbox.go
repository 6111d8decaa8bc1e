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
type outboxFlags struct {
	shards          int
	bucket          time.Duration
	relay           string
	intents, relays string
}

func (f *outboxFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.shards, "shards", outbox.DefaultShards, "the outbox's shard count (as its stagers and relays use)")
	fs.DurationVar(&f.bucket, "bucket", outbox.DefaultBucket, "the outbox's bucket width (as its stagers and relays use)")
	fs.StringVar(&f.relay, "relay", outbox.DefaultRelayName, "the relay group whose shard cursors to read")
	fs.StringVar(&f.intents, "intents-table", outbox.DefaultIntentsTable, "the outbox's intents table (outbox.WithTables)")
	fs.StringVar(&f.relays, "relays-table", outbox.DefaultRelaysTable, "the outbox's relays table (outbox.WithTables)")
}

func (e *env) outboxAdmin(f *outboxFlags) (*outbox.Admin, error) {
	a, err := outbox.NewAdmin(e.session, outbox.WithKeyspace(e.keyspace), outbox.WithShards(f.shards),
		outbox.WithBucket(f.bucket), outbox.WithRelayName(f.relay), outbox.WithTables(f.intents, f.relays))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return a, nil
}

// pendingView is one pending intent as outbox pending prints it.
type pendingView struct {
	Namespace string    `json:"namespace"`
	Key       string    `json:"key"`
	Record    string    `json:"record,omitempty"` // the guard's table of a message's intent
	Fence     int64     `json:"fence"`
	Verdict   string    `json:"verdict"`
	Events    int       `json:"events"`
	StagedAt  time.Time `json:"staged_at"`
	Bucket    time.Time `json:"bucket"`
	Shard     int       `json:"shard"`
	Error     string    `json:"error,omitempty"`
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
	summary: "list outbox intents not yet published or dropped (staged since -since, or kept by a relay's cursor) with their record's verdict, and the relays' shard cursors",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var of outboxFlags
		of.register(fs)
		var l listing
		l.register(fs, time.Hour, "read the buckets from this long ago on", 100, "intents")
		return func(ctx context.Context, e *env, _ []string) error {
			if err := l.check(fs); err != nil {
				return err
			}
			a, err := e.outboxAdmin(&of)
			if err != nil {
				return err
			}
			cursors, err := a.Cursors(ctx)
			if err != nil {
				return err
			}
			var out []pendingView
			truncated, err := ended(a.ListPending(ctx, l.from(time.Now()), collect(&l, &out, func(p outbox.Pending) pendingView {
				v := pendingView{Namespace: p.Namespace, Key: p.Key, Record: p.Record, Fence: p.Fence, Verdict: p.Verdict, Events: p.Events,
					StagedAt: p.StagedAt.UTC(), Bucket: p.Bucket, Shard: p.Shard}
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
			return e.emit(map[string]any{"pending": out, "truncated": truncated, "shards": cv}, func(w io.Writer) {
				row(w, "NAMESPACE", "KEY", "FENCE", "VERDICT", "EVENTS", "STAGED", "SHARD")
				for _, p := range out {
					verdict := p.Verdict
					if p.Error != "" {
						verdict += ": " + strconv.Quote(p.Error)
					}
					row(w, strconv.Quote(p.Namespace), strconv.Quote(p.Key), p.Fence, verdict, p.Events, stampRel(p.StagedAt, now), p.Shard)
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
		}
	},
}

var outboxReplayCommand = &command{
	name: "outbox replay", args: []string{"NAMESPACE", "KEY"},
	summary: "have the relay publish a committed operation's events again, with the same ids (consumers that applied them drop them); needs -yes, or -dry-run to only show them",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var of outboxFlags
		of.register(fs)
		var wf writeFlags
		wf.register(fs)
		return func(ctx context.Context, e *env, args []string) error {
			a, err := e.outboxAdmin(&of)
			if err != nil {
				return err
			}
			// Read what a replay would publish, show it, and write only once confirmed: the
			// same plan-then-confirm rule as every other command that writes.
			res, err := a.Replay(ctx, args[0], args[1], true)
			if err != nil {
				return err
			}
			lines := []string{fmt.Sprintf("replay %d events of %s %s (the relay publishes them again, with the same ids)", len(res.Messages), display(args[0]), display(args[1]))}
			goOn, err := e.plan(&wf, lines, "the events reach every consumer again; consumers that applied them drop them by id")
			if err != nil {
				return err
			}
			dry := !goOn
			if goOn {
				if res, err = a.Replay(ctx, args[0], args[1], false); err != nil {
					return err
				}
			}
			action := "replayed"
			switch {
			case dry:
				action = "would replay (dry run: nothing written)"
			case !res.Changed:
				action = "already pending: the relay publishes it on its next pass"
			}
			type eventView struct {
				ID   string `json:"id"`
				Type string `json:"type"`
				Key  string `json:"key"`
				Size int    `json:"payload_bytes"`
			}
			evs := make([]eventView, 0, len(res.Messages))
			for _, m := range res.Messages {
				evs = append(evs, eventView{ID: m.ID, Type: m.Type, Key: m.Key, Size: len(m.Payload)})
			}
			return e.emit(map[string]any{"action": action, "dry_run": dry, "changed": res.Changed, "namespace": args[0], "key": args[1],
				"bucket": res.Bucket, "shard": res.Shard, "events": evs}, func(w io.Writer) {
				row(w, action, strconv.Quote(args[0]), strconv.Quote(args[1]))
				row(w, "ID", "TYPE", "KEY", "PAYLOAD BYTES")
				for _, v := range evs {
					row(w, v.ID, strconv.Quote(v.Type), strconv.Quote(v.Key), v.Size)
				}
			})
		}
	},
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
