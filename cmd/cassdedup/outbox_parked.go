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

// parkedView is a parked operation as outbox parked prints it.
type parkedView struct {
	Namespace string      `json:"namespace"`
	Key       string      `json:"key"`
	Record    string      `json:"record,omitempty"`
	Fence     int64       `json:"fence"`
	Shard     int         `json:"shard"`
	Reason    string      `json:"reason"`
	Attempts  int         `json:"attempts"`
	LastError string      `json:"last_error,omitempty"`
	StagedAt  time.Time   `json:"staged_at"`
	ParkedAt  time.Time   `json:"parked_at"`
	Events    []eventView `json:"events"`
	Error     string      `json:"error,omitempty"`
}

// eventView is one event of a replay, an unpark or a discard.
type eventView struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Key  string `json:"key"`
	Size int    `json:"payload_bytes"`
}

func eventViews(msgs []outbox.Message) []eventView {
	evs := make([]eventView, 0, len(msgs))
	for _, m := range msgs {
		evs = append(evs, eventView{ID: m.ID, Type: m.Type, Key: m.Key, Size: len(m.Payload)})
	}
	return evs
}

func parkedViewOf(p outbox.Parked) parkedView {
	v := parkedView{Namespace: p.Namespace, Key: p.Key, Record: p.Record, Fence: p.Fence, Shard: p.Shard, Reason: p.Reason,
		Attempts: p.Attempts, LastError: p.LastError, StagedAt: p.StagedAt.UTC(), ParkedAt: p.ParkedAt.UTC(), Events: eventViews(p.Messages)}
	if p.Err != nil {
		v.Error = p.Err.Error()
	}
	return v
}

var outboxParkedCommand = &command{
	name:    "outbox parked",
	summary: "list the events a relay parked: publication failed too often (poison, stalled) or their record expired before a relay settled them (expired: whether the run committed is unknown); exit status 1 when any is parked",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var of outboxFlags
		of.register(fs)
		return listed(fs, 0, "", 100, "parked operations", func(ctx context.Context, e *env, _ []string, l *listing) error {
			a, err := e.outboxAdmin(&of)
			if err != nil {
				return err
			}
			var out []parkedView
			truncated, err := ended(a.ListParked(ctx, collect(l, &out, parkedViewOf)))
			if err != nil {
				return err
			}
			now := time.Now()
			if err := e.emit(map[string]any{"parked": out, "truncated": truncated}, func(w io.Writer) {
				row(w, "NAMESPACE", "KEY", "REASON", "ATTEMPTS", "EVENTS", "PARKED", "LAST ERROR")
				for _, p := range out {
					row(w, strconv.Quote(p.Namespace), strconv.Quote(p.Key), p.Reason, p.Attempts, len(p.Events), stampRel(p.ParkedAt, now),
						strconv.Quote(p.LastError))
				}
				if len(out) == 0 {
					fmt.Fprintln(w, "no parked events")
				}
				l.stopped(w, truncated)
			}); err != nil {
				return err
			}
			if len(out) > 0 {
				// Parked events are an incident: a script or a check fails on them.
				return fmt.Errorf("%d operations have parked events: replay them (outbox unpark) or discard them (outbox discard)", len(out))
			}
			return nil
		})
	},
}

var outboxUnparkCommand = requeueCommand("outbox unpark",
	"hand an operation's parked events back to the relay, which publishes them with the same ids (for an expired one: the decision that its run committed); needs -yes, or -dry-run to only show them",
	(*outbox.Admin).Unpark, "unpark %d events of %s %s (the relay publishes them, with the same ids)",
	"the events reach every consumer; if their publication failed for good it fails again and they are parked again",
	func(_ outbox.Replayed, wrote bool) string {
		if wrote {
			return "unparked: the relay publishes them on its next pass"
		}
		return "would unpark (dry run: nothing written)"
	})

var outboxDiscardCommand = &command{
	name: "outbox discard", args: []string{"NAMESPACE", "KEY"},
	summary: "delete an operation's parked events for good: they are never published; needs -yes, or -dry-run to only show them",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		return outboxWrite(fs, func(ctx context.Context, e *env, a *outbox.Admin, wf *writeFlags, ns, key string) error {
			msgs, wrote, err := planned(e, wf, func(dry bool) ([]outbox.Message, error) {
				ps, err := a.Discard(ctx, ns, key, dry)
				var msgs []outbox.Message
				for _, p := range ps {
					msgs = append(msgs, p.Messages...)
				}
				return msgs, err
			}, func(msgs []outbox.Message) string {
				return fmt.Sprintf("discard %d parked events of %s %s", len(msgs), display(ns), display(key))
			}, "the events are never published: no consumer will see them")
			if err != nil {
				return err
			}
			action := "would discard (dry run: nothing written)"
			if wrote {
				action = "discarded"
			}
			return emitEvents(e, action, !wrote, ns, key, msgs, nil)
		})
	},
}

// outboxWrite is the scaffolding of the commands that change one operation's events: the
// outbox's flags and the write flags, and the admin to run them with.
func outboxWrite(fs *flag.FlagSet, run func(ctx context.Context, e *env, a *outbox.Admin, wf *writeFlags, ns, key string) error) func(context.Context, *env, []string) error {
	var of outboxFlags
	of.register(fs)
	var wf writeFlags
	wf.register(fs)
	return func(ctx context.Context, e *env, args []string) error {
		a, err := e.outboxAdmin(&of)
		if err != nil {
			return err
		}
		return run(ctx, e, a, &wf, args[0], args[1])
	}
}

// emitEvents prints the outcome of a change to one operation's events: the action, the
// operation and its events; fields adds to the JSON document.
func emitEvents(e *env, action string, dry bool, ns, key string, msgs []outbox.Message, fields map[string]any) error {
	evs := eventViews(msgs)
	doc := map[string]any{"action": action, "dry_run": dry, "namespace": ns, "key": key, "events": evs}
	for k, v := range fields {
		doc[k] = v
	}
	return e.emit(doc, func(w io.Writer) {
		row(w, action, strconv.Quote(ns), strconv.Quote(key))
		eventTable(w, evs)
	})
}

func eventTable(w io.Writer, evs []eventView) {
	row(w, "ID", "TYPE", "KEY", "PAYLOAD BYTES")
	for _, v := range evs {
		row(w, v.ID, strconv.Quote(v.Type), strconv.Quote(v.Key), v.Size)
	}
}
