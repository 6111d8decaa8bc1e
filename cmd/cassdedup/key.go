package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// recordView is a record as key get and message get print it.
type recordView struct {
	Key           []any      `json:"key"`
	Status        string     `json:"status"`
	Meaning       string     `json:"meaning"`
	Owner         string     `json:"owner"`
	Fence         int64      `json:"fence"`
	Attempts      int        `json:"attempts"`
	LeaseUntil    *time.Time `json:"lease_until,omitempty"`
	LeaseLive     bool       `json:"lease_live"`
	LeaseOwner    string     `json:"lease_owner,omitempty"`
	CreatedAt     *time.Time `json:"created_at,omitempty"`
	UpdatedAt     *time.Time `json:"updated_at,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
	TTLSeconds    int64      `json:"ttl_seconds"`
	Epoch         int64      `json:"epoch,omitempty"`
	Fingerprint   string     `json:"fingerprint,omitempty"`
	ResultBytes   int        `json:"result_bytes"`
	ResultPreview string     `json:"result_preview,omitempty"`
}

func viewRecord(in *lwt.Inspection, now time.Time, previewBytes int) recordView {
	v := recordView{
		Key: in.Key, Status: string(in.Status), Meaning: meaning(in, now), Owner: in.Owner.String(),
		Fence: in.Fence, Attempts: in.Attempts, LeaseLive: in.LiveLease,
		LeaseUntil: tptr(in.LeaseUntil), CreatedAt: tptr(in.CreatedAt), UpdatedAt: tptr(in.UpdatedAt), ExpiresAt: tptr(in.ExpiresAt),
		TTLSeconds: int64(in.TTL / time.Second), Epoch: in.Epoch, ResultBytes: len(in.Result),
		ResultPreview: preview(in.Result, previewBytes),
	}
	if in.LeaseOwner != (gocql.UUID{}) {
		v.LeaseOwner = in.LeaseOwner.String()
	}
	if len(in.Fingerprint) > 0 {
		v.Fingerprint = hex.EncodeToString(in.Fingerprint[:min(8, len(in.Fingerprint))])
	}
	return v
}

func tptr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// meaning says what the record means for the next attempt: the first line of the runbook.
func meaning(in *lwt.Inspection, now time.Time) string {
	switch {
	case in.Status == lwt.StatusStarted && in.LiveLease:
		return fmt.Sprintf("held by a running claim until %s (%s): a duplicate gets ErrInProgress (HTTP 409); wait, or release with -force if its worker is gone",
			stamp(in.LeaseUntil), relative(in.LeaseUntil, now))
	case in.Status == lwt.StatusStarted && in.LeaseUntil.IsZero():
		return fmt.Sprintf("its lease expired on the server and no attempt took it over: its worker died or stalled; the next attempt takes it over with fence %d, or release it now",
			in.Fence+1)
	case in.Status == lwt.StatusStarted:
		return fmt.Sprintf("the lease passed %s and no attempt took it over: its worker died or stalled; the next attempt takes it over with fence %d, or release it now",
			relative(in.LeaseUntil, now), in.Fence+1)
	case in.Status == lwt.StatusCompleted:
		return "completed: every retry replays the stored result"
	case in.Status == lwt.StatusFailed:
		return "failed permanently: every retry replays the stored error; release it to let it run again after a fix"
	case in.Status == lwt.StatusReleased:
		return fmt.Sprintf("released after a retryable failure (%d attempts): the next attempt runs again with fence %d", in.Attempts, in.Fence+1)
	}
	return "unknown status"
}

// leaseText describes a STARTED claim's lease.
func leaseText(in *lwt.Inspection, now time.Time) string {
	switch {
	case in.LiveLease && in.LeaseOwner != (gocql.UUID{}):
		return fmt.Sprintf("live until %s (%s), held by %s", stamp(in.LeaseUntil), relative(in.LeaseUntil, now), in.LeaseOwner)
	case in.LiveLease:
		return fmt.Sprintf("live until %s (%s)", stamp(in.LeaseUntil), relative(in.LeaseUntil, now))
	case in.LeaseUntil.IsZero():
		return "expired (the server dropped the lease cells)"
	}
	return fmt.Sprintf("passed at %s (%s)", stamp(in.LeaseUntil), relative(in.LeaseUntil, now))
}

func (e *env) printRecord(in *lwt.Inspection, previewBytes int) error {
	now := time.Now()
	v := viewRecord(in, now, previewBytes)
	return e.emit(v, func(w io.Writer) {
		row(w, "key", keyText(in.Key))
		row(w, "status", in.Status)
		row(w, "meaning", v.Meaning)
		row(w, "owner", v.Owner)
		row(w, "fence", in.Fence)
		row(w, "attempts", in.Attempts)
		if in.Status == lwt.StatusStarted { // an ended claim's lease cells only wait for their TTL
			row(w, "lease", leaseText(in, now))
		}
		row(w, "created", stamp(in.CreatedAt))
		row(w, "updated", stampRel(in.UpdatedAt, now))
		row(w, "expires", stampRel(in.ExpiresAt, now))
		row(w, "ttl", fmt.Sprintf("%ds (the node's)", v.TTLSeconds))
		if in.Epoch != 0 {
			row(w, "epoch", fmt.Sprintf("%d (written by the fast path)", in.Epoch))
		}
		if v.Fingerprint != "" {
			row(w, "fingerprint", v.Fingerprint+"...")
		}
		row(w, "result", fmt.Sprintf("%d bytes", len(in.Result)))
		if v.ResultPreview != "" {
			row(w, "preview", v.ResultPreview)
		}
	})
}

// store is the lwt store over the table named by -table in the command's keyspace.
func (e *env) store(table string) (*lwt.Store, error) {
	cl, serial := e.consistencies()
	t := lwt.IdempotencyKeys(e.keyspace)
	t.Name = table
	return lwt.NewStore(e.session, t, lwt.WithConsistency(cl), lwt.WithSerialConsistency(serial))
}

// guardFlags are the flags naming the consumer guard's tables and retention.
type guardFlags struct {
	records, byScope string
	retention        time.Duration
}

func (g *guardFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.records, "table", "processed_messages", "the guard's record table")
	fs.StringVar(&g.byScope, "index-table", "processed_messages_by_scope", "the by-scope index table of earlier releases (still read)")
	fs.DurationVar(&g.retention, "retention", guard.DefaultRetention, "the guard's retention (guard.WithRetention)")
}

func (e *env) guard(g *guardFlags) (*guard.Guard, error) {
	cl, serial := e.consistencies()
	return guard.New(e.session, guard.WithKeyspace(e.keyspace), guard.WithConsistency(cl),
		guard.WithSerialConsistency(serial), guard.WithMessageTables(g.records, g.byScope), guard.WithRetention(g.retention))
}

// target is what a get, release or purge acts on: a key of an lwt table or a guard's message.
type target struct {
	inspect func(context.Context) (*lwt.Inspection, error)
	release func(context.Context, ...lwt.AdminOption) (lwt.AdminResult, error)
	delete  func(context.Context, ...lwt.AdminOption) (lwt.AdminResult, error)
}

func keyTarget(e *env, table string, args []string) (target, error) {
	s, err := e.store(table)
	if err != nil {
		return target{}, err
	}
	k := lwt.IdempotencyKey(args[0], args[1])
	return target{
		inspect: func(ctx context.Context) (*lwt.Inspection, error) { return s.Inspect(ctx, k) },
		release: func(ctx context.Context, o ...lwt.AdminOption) (lwt.AdminResult, error) {
			return s.ReleaseKey(ctx, k, o...)
		},
		delete: func(ctx context.Context, o ...lwt.AdminOption) (lwt.AdminResult, error) {
			return s.Delete(ctx, k, o...)
		},
	}, nil
}

func messageTarget(e *env, gf *guardFlags, args []string) (target, error) {
	scope, err := parseScope(args[:3])
	if err != nil {
		return target{}, err
	}
	g, err := e.guard(gf)
	if err != nil {
		return target{}, err
	}
	id := args[3]
	return target{
		inspect: func(ctx context.Context) (*lwt.Inspection, error) { return g.Inspect(ctx, scope, id) },
		release: func(ctx context.Context, o ...lwt.AdminOption) (lwt.AdminResult, error) {
			return g.ReleaseMessage(ctx, scope, id, o...)
		},
		delete: func(ctx context.Context, o ...lwt.AdminOption) (lwt.AdminResult, error) {
			return g.DeleteMessage(ctx, scope, id, o...)
		},
	}, nil
}

func parseScope(args []string) (guard.Scope, error) {
	p, err := strconv.ParseInt(args[2], 10, 32)
	if err != nil || p < 0 {
		return guard.Scope{}, fmt.Errorf("%w: partition %q must be a non-negative integer", errUsage, args[2])
	}
	return guard.Scope{Group: args[0], Topic: args[1], Partition: int32(p)}, nil
}

// record is a kind of record that the get, release and purge commands act on: the first word
// of their names, their arguments, and how they find one (with the flags that takes).
type record struct {
	noun    string
	args    []string
	resolve func(*flag.FlagSet) func(*env, []string) (target, error)
}

// get makes the command that shows a record.
func (r record) get(summary string) *command {
	resolve := r.resolve
	return &command{name: r.noun + " get", args: r.args, summary: summary,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			n := fs.Int("preview", 64, "show at most this many bytes of the result (0: none)")
			find := resolve(fs)
			return func(ctx context.Context, e *env, args []string) error {
				t, err := find(e, args)
				if err != nil {
					return err
				}
				in, err := t.inspect(ctx)
				if errors.Is(err, lwt.ErrNotFound) {
					return fmt.Errorf("no record of %s: never claimed, purged, or expired", keyText(stringsToAny(args)))
				}
				if err != nil {
					return err
				}
				return e.printRecord(in, *n)
			}
		}}
}

// release makes the command that releases a record; it refuses a live lease unless -force.
func (r record) release(summary string) *command {
	resolve := r.resolve
	return &command{name: r.noun + " release", args: r.args, summary: summary + "; refuses a live lease unless -force",
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			force := fs.Bool("force", false, "release even a claim whose lease is live (its worker may still be running)")
			note := fs.String("note", "released by an operator", "stored as the record's last error, for whoever reads it next")
			var wf writeFlags
			wf.register(fs)
			find := resolve(fs)
			return func(ctx context.Context, e *env, args []string) error {
				opts := []lwt.AdminOption{lwt.WithNote(*note)}
				return e.administer(ctx, find, args, "release", *force, &wf, opts, func(in *lwt.Inspection) string {
					if in.Status == lwt.StatusReleased {
						return "already RELEASED: nothing written"
					}
					return fmt.Sprintf("RELEASED: the next attempt claims it again with fence %d", in.Fence+1)
				}, func(t target) func(context.Context, ...lwt.AdminOption) (lwt.AdminResult, error) { return t.release })
			}
		}}
}

// purge makes the command that deletes a record; it refuses a live lease unless -force.
func (r record) purge(summary string) *command {
	resolve := r.resolve
	return &command{name: r.noun + " purge", args: r.args, summary: summary + "; refuses a live lease unless -force",
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			force := fs.Bool("force", false, "purge even a claim whose lease is live (its worker may still be running)")
			var wf writeFlags
			wf.register(fs)
			find := resolve(fs)
			return func(ctx context.Context, e *env, args []string) error {
				return e.administer(ctx, find, args, "purge", *force, &wf, nil, func(*lwt.Inspection) string {
					return "no record: the next request with this key runs as a new one (fence 1)"
				}, func(t target) func(context.Context, ...lwt.AdminOption) (lwt.AdminResult, error) { return t.delete })
			}
		}}
}

// administer is a release or purge: it inspects the record, prints what it will do, asks for
// a confirmation when the next retry would run the operation again, and acts only on the
// record it showed (lwt.IfUnchanged).
func (e *env) administer(ctx context.Context, find func(*env, []string) (target, error), args []string, verb string, force bool,
	wf *writeFlags, opts []lwt.AdminOption, after func(*lwt.Inspection) string,
	act func(target) func(context.Context, ...lwt.AdminOption) (lwt.AdminResult, error)) error {
	t, err := find(e, args)
	if err != nil {
		return err
	}
	in, err := t.inspect(ctx)
	if err != nil {
		return adminError(args, err)
	}
	if in.LiveLease && !force {
		return adminError(args, &lwt.InProgressError{LeaseUntil: in.LeaseUntil, Attempts: in.Attempts})
	}
	then := after(in)
	lines := []string{
		fmt.Sprintf("will %s %s", verb, keyText(in.Key)),
		"now:  " + recordSummary(in),
		"then: " + then,
	}
	goOn, err := e.plan(wf, lines, adminRisk(in))
	if err != nil || !goOn {
		if err == nil && e.json { // a dry run: the plan as JSON too
			return e.emit(map[string]any{"action": verb, "dry_run": true, "key": in.Key, "changed": false,
				"before": viewRecord(in, time.Now(), 0), "after": then}, nil)
		}
		return err
	}
	if force {
		opts = append(opts, lwt.Force())
	}
	res, err := act(t)(ctx, append(opts, lwt.IfUnchanged(in))...)
	if err != nil {
		return adminError(args, err)
	}
	if !res.Changed {
		then = "already RELEASED: nothing written"
	}
	return e.printAdmin(verb+"d", res, then)
}

// adminRisk says why releasing or purging in needs a confirmation: its next retry runs the
// operation again where it would have been answered, or beside a worker that may be running.
func adminRisk(in *lwt.Inspection) string {
	key := keyText(in.Key)
	switch {
	case in.LiveLease:
		return fmt.Sprintf("%s is held by a live lease until %s: its worker may still be running, and the next attempt would run the operation again beside it", key, stamp(in.LeaseUntil))
	case in.Status == lwt.StatusCompleted:
		return fmt.Sprintf("%s is COMPLETED: its next retry runs the operation again (its side effect a second time) instead of replaying the stored result", key)
	case in.Status == lwt.StatusFailed:
		return fmt.Sprintf("%s is FAILED: its next retry runs the operation again instead of replaying the stored error", key)
	}
	return ""
}

// recordSummary is a record on one line.
func recordSummary(b *lwt.Inspection) string {
	s := fmt.Sprintf("%s, fence %d, attempts %d, %d-byte result", b.Status, b.Fence, b.Attempts, len(b.Result))
	if b.Status == lwt.StatusStarted {
		s += ", lease " + leaseText(b, time.Now())
	}
	return s
}

// adminError explains a refused or failed release or purge.
func adminError(args []string, err error) error {
	var live *lwt.InProgressError
	switch {
	case errors.As(err, &live):
		return fmt.Errorf("refused: %s is held by a live lease until %s (%s): a worker may be running it; wait for the lease to pass, or pass -force if the worker is gone",
			keyText(stringsToAny(args)), stamp(live.LeaseUntil), relative(live.LeaseUntil, time.Now()))
	case errors.Is(err, lwt.ErrNotFound):
		return fmt.Errorf("no record of %s: nothing to do", keyText(stringsToAny(args)))
	case errors.Is(err, lwt.ErrRecordChanged):
		return fmt.Errorf("%w; run the command again to see it as it is now", err)
	}
	return err
}

func (e *env) printAdmin(verb string, res lwt.AdminResult, after string) error {
	b := res.Before
	before := recordSummary(b)
	v := map[string]any{"action": verb, "key": b.Key, "changed": res.Changed, "before": viewRecord(b, time.Now(), 0), "after": after}
	return e.emit(v, func(w io.Writer) {
		row(w, verb, keyText(b.Key))
		row(w, "before", before)
		row(w, "after", after)
	})
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// keyResolver reads -table and finds a key of it.
func keyResolver(fs *flag.FlagSet) func(*env, []string) (target, error) {
	table := fs.String("table", "idempotency_keys", "the lwt record table (keyed by namespace and key)")
	return func(e *env, args []string) (target, error) { return keyTarget(e, *table, args) }
}

// messageResolver reads the guard's flags and finds a message.
func messageResolver(fs *flag.FlagSet) func(*env, []string) (target, error) {
	var gf guardFlags
	gf.register(fs)
	return func(e *env, args []string) (target, error) { return messageTarget(e, &gf, args) }
}

var (
	keyRecord     = record{noun: "key", args: []string{"NAMESPACE", "KEY"}, resolve: keyResolver}
	messageRecord = record{noun: "message", args: []string{"GROUP", "TOPIC", "PARTITION", "ID"}, resolve: messageResolver}

	keyGetCommand         = keyRecord.get("show a key's record: status, owner, fence, attempts, lease, expiry, TTL, result size and preview")
	keyReleaseCommand     = keyRecord.release("release a key (RELEASED) so the next attempt runs again")
	keyPurgeCommand       = keyRecord.purge("delete a key's record so the next request runs as new")
	messageGetCommand     = messageRecord.get("show a message's record in the consumer guard")
	messageReleaseCommand = messageRecord.release("release a message so its next delivery runs the handler again")
	messagePurgeCommand   = messageRecord.purge("delete a message's record so its next delivery is processed as new")
)
