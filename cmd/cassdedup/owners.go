package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cassdedup/cassdedup/guard"
)

// ownerView is one partition of a group in the fast path's owners table, as printed.
type ownerView struct {
	Topic       string    `json:"topic"`
	Partition   int32     `json:"partition"`
	Epoch       int64     `json:"epoch"`
	Holder      string    `json:"holder"`
	LeaseHolder string    `json:"lease_holder,omitempty"`
	Renewed     time.Time `json:"renewed"`
	Forgotten   bool      `json:"forgotten,omitempty"`
}

func ownerViewOf(o guard.Owner) ownerView {
	v := ownerView{Topic: o.Scope.Topic, Partition: o.Scope.Partition, Epoch: o.Epoch, Holder: o.Holder.String(),
		Renewed: o.Renewed.UTC(), Forgotten: o.Forgotten}
	if o.Live() {
		v.LeaseHolder = o.LeaseHolder.String()
	}
	return v
}

func ownerTable(w io.Writer, out []ownerView, now time.Time, action bool) {
	row(w, "TOPIC", "PARTITION", "EPOCH", "HOLDER", "LEASE", "RENEWED", "")
	for _, o := range out {
		lease, act := "none", ""
		if o.LeaseHolder != "" {
			lease = "live: " + o.LeaseHolder
		}
		if action {
			act = map[bool]string{true: "forget", false: "keep (live lease)"}[o.Forgotten]
		}
		row(w, display(o.Topic), o.Partition, o.Epoch, o.Holder, lease, stampRel(o.Renewed, now), act)
	}
	if len(out) == 0 {
		fmt.Fprintln(w, "no partitions of the group in the owners table")
	}
}

var ownersListCommand = &command{
	name: "owners list", args: []string{"GROUP"},
	summary: "list the partitions of a consumer group in the fast path's owners table: the epoch (generation) and holder of the last Own, and whether a lease is live; a partition whose epoch is above the group's generation and has no lease is one Own refuses (lwt.ErrEpochRegressed)",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var gf guardFlags
		gf.register(fs)
		return func(ctx context.Context, e *env, args []string) error {
			g, err := e.guard(&gf)
			if err != nil {
				return err
			}
			var out []ownerView
			if err := g.ListOwners(ctx, args[0], func(o guard.Owner) error {
				out = append(out, ownerViewOf(o))
				return nil
			}); err != nil {
				return err
			}
			now := time.Now()
			return e.emit(map[string]any{"group": args[0], "owners": out}, func(w io.Writer) { ownerTable(w, out, now, false) })
		}
	},
}

var ownersForgetCommand = &command{
	name: "owners forget", args: []string{"GROUP"},
	summary: "delete the owners-table rows of a group's partitions that no consumer holds a lease on, so the group's consumers take them at any generation: the repair after its generations went back (group deleted or expired, mirrored, switched to KIP-848; docs/operating.md); a dry run unless -yes",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var gf guardFlags
		gf.register(fs)
		var wf writeFlags
		wf.register(fs)
		return func(ctx context.Context, e *env, args []string) error {
			g, err := e.guard(&gf)
			if err != nil {
				return err
			}
			group := args[0]
			wf.dryRun = wf.dryRun || !wf.yes // a dry run unless confirmed
			owners, wrote, err := planned(e, &wf, func(dry bool) ([]guard.Owner, error) {
				return g.ForgetOwners(ctx, group, dry)
			}, func(os []guard.Owner) string {
				n := 0
				for _, o := range os {
					if o.Forgotten {
						n++
					}
				}
				return fmt.Sprintf("forget %d of the %d partitions of group %s in the owners table (those with a live lease are kept)", n, len(os), strconv.Quote(group))
			}, "a consumer of the group's old generations that still runs could take a forgotten partition back, until the partition's current owner takes it from it (nothing runs twice: the lease fences each owner)")
			if err != nil {
				return err
			}
			out := make([]ownerView, 0, len(owners))
			for _, o := range owners {
				out = append(out, ownerViewOf(o))
			}
			action := "forgotten"
			if !wrote {
				action = "would forget (dry run: nothing written; -yes forgets, once no consumer of the group's old generations runs)"
			}
			now := time.Now()
			return e.emit(map[string]any{"action": action, "dry_run": !wrote, "group": group, "owners": out}, func(w io.Writer) {
				fmt.Fprintln(w, action)
				ownerTable(w, out, now, true)
			})
		}
	},
}
