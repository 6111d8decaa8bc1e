package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// messageView is one message as messages list prints it.
type messageView struct {
	ID         string     `json:"id"`
	Hour       time.Time  `json:"hour"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	Fence      int64      `json:"fence"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
}

var messagesListCommand = &command{
	name: "messages list", args: []string{"GROUP", "TOPIC", "PARTITION"},
	summary: "list the messages of a scope indexed since -since, with their status (one serial read each)",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var gf guardFlags
		gf.register(fs)
		return listed(fs, time.Hour, "list the index windows (and earlier releases' hour buckets) from this long ago on", 100, "messages", func(ctx context.Context, e *env, args []string, l *listing) error {
			scope, err := parseScope(args)
			if err != nil {
				return err
			}
			g, err := e.guard(&gf)
			if err != nil {
				return err
			}
			var out []messageView
			truncated, err := ended(g.ListMessages(ctx, scope, l.from(time.Now()), collect(l, &out, func(m guard.MessageRecord) messageView {
				v := messageView{ID: m.ID, Hour: m.Hour.UTC(), Status: "(no record)"}
				if r := m.Record; r != nil {
					v.Status, v.Attempts, v.Fence, v.UpdatedAt = string(r.Status), r.Attempts, r.Fence, tptr(r.UpdatedAt)
					if r.Status == lwt.StatusStarted {
						v.LeaseUntil = tptr(r.LeaseUntil)
					}
				}
				return v
			})))
			if err != nil {
				return err
			}
			now := time.Now()
			return e.emit(map[string]any{"messages": out, "truncated": truncated}, func(w io.Writer) {
				row(w, "ID", "STATUS", "ATTEMPTS", "FENCE", "LEASE UNTIL", "UPDATED", "INDEXED IN HOUR")
				for _, m := range out {
					row(w, display(m.ID), m.Status, m.Attempts, m.Fence, relTime(m.LeaseUntil, now), relTime(m.UpdatedAt, now), stamp(m.Hour))
				}
				l.stopped(w, truncated)
			})
		})
	},
}
