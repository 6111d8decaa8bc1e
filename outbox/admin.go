package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Pending is an intent not yet settled, with what its record says now.
type Pending struct {
	Namespace, Key string
	Record         string // the record's table when not the records table: a guard's (Namespace is then GuardNamespace)
	Fence          int64
	Bucket         time.Time
	Shard          int
	StagedAt       time.Time
	// Verdict: "committed" (the relay publishes it on its next pass over the bucket), "in
	// flight" (the run has not ended) or "not committed" (the relay drops it); "unreadable"
	// when the record could not be read (Err).
	Verdict string
	Events  int // committed events waiting to be published
	Err     error
	// Attempts: the publisher's rejections of the events so far (the relay parks them after
	// WithMaxAttempts; timeouts and an unreachable broker count none). LastError: the last
	// failed publication's error, whatever its kind. RecordExpires: when the record expires; past it (verdict "expired") the
	// relay parks the events, since whether the run committed can no longer be read.
	Attempts      int
	LastError     string
	RecordExpires time.Time
}

// ShardCursor is a shard's lease and cursor as a relay left them.
type ShardCursor struct {
	Shard      int
	Status     string // STARTED while a relay holds it, RELEASED when its relay stopped
	Fence      int64
	LeaseLive  bool
	Frontier   time.Time // the first bucket not yet swept
	Pending    []time.Time
	HasCursors bool
}

// Admin is the operator's view of the outbox: pending intents, shard cursors, parked events,
// and the replay of an operation's events. It is safe for concurrent use. It takes the layout
// (shards, bucket, horizon) stored with the intents for every setting its options leave at the
// default, and refuses a configured one that differs (ErrLayoutMismatch).
type Admin struct {
	judge
	mu                               sync.Mutex // guards the first layout check, which may set cfg
	layout                           *layoutGuard
	readCursors, insertIfNot, reopen string
	arrive                           string // the requeued intent's arrival, so a relay finds it at once
	parked                           parkedStatements
}

// NewAdmin returns the operator's view of the outbox tables of session.
func NewAdmin(session *gocql.Session, opts ...AdminOption) (*Admin, error) {
	cfg, err := newConfig(session == nil, optcheck.Unwrap(opts, AdminOption.adminOption))
	if err != nil {
		return nil, err
	}
	// A replay stages like a stager, in the bucket of the cluster's time (clock.go).
	if err := cfg.measureClock(session, "outbox admin"); err != nil {
		return nil, err
	}
	j := newJudge(session, cfg)
	intents, relays := cfg.q.intents, cfg.q.relays
	return &Admin{judge: j, layout: newLayoutGuard(cfg), parked: newParkedStatements(cfg),
		readCursors: "SELECT shard, status, fence, lease_owner, frontier, pending FROM " + relays + " WHERE relay = ? AND shard = ?",
		insertIfNot: "INSERT INTO " + intents + " (bucket, shard, namespace, key, fence, owner, staged_at, record, committed, events, expires_at, order_key)" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		reopen: "UPDATE " + intents + " USING TTL ? SET state = null, staged_at = ?, committed = ?, events = ?, expires_at = ?, attempts = null, next_attempt = null, order_key = ?" +
			" WHERE bucket = ? AND shard = ? AND namespace = ? AND key = ? AND fence = ?" +
			" IF state IN ('" + StatePublished + "', '" + StateDropped + "', '" + StateParked + "')",
		arrive: "INSERT INTO " + cfg.q.arrivals + " (bucket, shard, namespace, key, fence, owner, staged_at, record, expires_at, committed)" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
	}, nil
}

// ready checks the layout once and adopts the stored one; every method calls it first.
func (a *Admin) ready(ctx context.Context) error {
	if err := argcheck.Call(ErrInvalidOption, "Admin", a == nil, ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.layout.ensure(ctx, a.session, &a.cfg, false, true)
}

// readyFor checks an operation's namespace and key as the record table's keys are checked
// (lwt.ErrInvalidKey: empty, too long, not UTF-8), before any read, then calls ready.
func (a *Admin) readyFor(ctx context.Context, namespace, key string) error {
	if err := errors.Join(checkName("namespace", namespace), checkName("key", key)); err != nil {
		return err
	}
	return a.ready(ctx)
}

// Layout returns the layout the admin works with: the stored one, unless options set another
// (then ErrLayoutMismatch).
func (a *Admin) Layout(ctx context.Context) (Layout, error) {
	if err := a.ready(ctx); err != nil {
		return Layout{}, err
	}
	return a.cfg.layout(), nil
}

// Cursors reads the shard cursors of the relay group (WithRelayName).
func (a *Admin) Cursors(ctx context.Context) ([]ShardCursor, error) {
	if err := a.ready(ctx); err != nil {
		return nil, err
	}
	var out []ShardCursor
	for s := 0; s < a.cfg.shards; s++ {
		m := map[string]any{}
		err := a.session.Query(a.readCursors, a.cfg.name, s).WithContext(ctx).Consistency(a.cfg.consistency).MapScan(m)
		if errors.Is(err, gocql.ErrNotFound) {
			out = append(out, ShardCursor{Shard: s})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("outbox: read cursor of shard %d: %w", s, err)
		}
		c := ShardCursor{Shard: s, HasCursors: true}
		c.Status, _ = m["status"].(string)
		c.Fence, _ = m["fence"].(int64)
		lo, _ := m["lease_owner"].(gocql.UUID)
		c.LeaseLive = lo != gocql.UUID{}
		if f, ok := m["frontier"].(int64); ok && f != 0 {
			c.Frontier = time.Unix(f, 0).UTC()
		}
		p, _ := m["pending"].([]int64)
		sort.Slice(p, func(i, j int) bool { return p[i] < p[j] })
		for _, b := range p {
			c.Pending = append(c.Pending, time.Unix(b, 0).UTC())
		}
		out = append(out, c)
	}
	return out, nil
}

// ListPending calls fn for every pending intent in the buckets from since to now and in the
// buckets the cursors keep as pending, oldest bucket first, with its record's verdict (one read
// each). A since older than the retention (and a bucket and the horizon), or zero, is moved up
// to that, or to the oldest bucket a relay has not swept yet if that is older: the buckets
// are read one after the other, never all listed first.
// fn's error stops the listing and is returned.
func (a *Admin) ListPending(ctx context.Context, since time.Time, fn func(Pending) error) error {
	if err := a.ready(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil fn", ErrInvalidOption)
	}
	cursors, err := a.Cursors(ctx)
	if err != nil {
		return err
	}
	now := a.cfg.now()
	// Older than the retention only the buckets no relay has swept yet (before the oldest
	// frontier) can hold intents the cursors do not list as pending.
	oldest := now.Add(-(a.cfg.retention + a.cfg.bucket + a.cfg.horizon))
	for _, c := range cursors {
		if !c.Frontier.IsZero() && c.Frontier.Before(oldest) {
			oldest = c.Frontier
		}
	}
	if since.Before(oldest) {
		since = oldest
	}
	width := int64(a.cfg.bucket / time.Second)
	first, last := a.cfg.bucketOf(since), a.cfg.bucketOf(now)
	// The cursors' pending buckets before first (few: those with intents still unsettled) are
	// read before the range; those inside it are read with it.
	seen := map[int64]bool{}
	var before []int64
	for _, c := range cursors {
		for _, p := range c.Pending {
			if b := p.Unix(); b < first && !seen[b] {
				seen[b] = true
				before = append(before, b)
			}
		}
	}
	sort.Slice(before, func(i, j int) bool { return before[i] < before[j] })
	for _, b := range before {
		if err := a.listBucket(ctx, b, fn); err != nil {
			return err
		}
	}
	for b := first; b <= last; b += width {
		if err := a.listBucket(ctx, b, fn); err != nil {
			return err
		}
	}
	return nil
}

// listBucket calls fn for the pending intents of every shard of bucket b.
func (a *Admin) listBucket(ctx context.Context, b int64, fn func(Pending) error) error {
	for s := 0; s < a.cfg.shards; s++ {
		rows, _, err := a.readBucket(ctx, b, s)
		if err != nil {
			return err
		}
		for _, v := range a.settleAll(ctx, rows) {
			p := Pending{Namespace: v.in.namespace, Key: v.in.key, Record: v.in.record, Fence: v.in.fence, Bucket: time.Unix(b, 0).UTC(),
				Shard: s, StagedAt: v.in.stagedAt, Events: len(v.msgs), Err: v.err, Attempts: v.in.attempts, LastError: v.in.lastError,
				RecordExpires: v.in.expiresAt}
			p.Verdict = map[decision]string{wait: "in flight", publish: "committed", drop: "not committed", expired: "expired"}[v.dec]
			if v.err != nil {
				p.Verdict = "unreadable"
			}
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Replayed is the outcome of Replay.
type Replayed struct {
	Messages []Message // the events the relay publishes again, with their ids
	Bucket   time.Time
	Shard    int
	Changed  bool // false for a dry run, or when an unsettled intent already waited there
}

// Replay has the relay publish a committed operation's events again, with the same ids (a
// consumer that applied them drops them): it reads the record at serial and writes a pending
// intent for its claim in the current bucket, with a copy of the events. With dryRun it only reads. ErrNotFound when the
// record is not COMPLETED or carries no events.
func (a *Admin) Replay(ctx context.Context, namespace, key string, dryRun bool) (Replayed, error) {
	if err := a.readyFor(ctx, namespace, key); err != nil {
		return Replayed{}, err
	}
	if strings.HasPrefix(namespace, guardPrefix) {
		return Replayed{}, fmt.Errorf("%w: replay reads operations' records, not a guard's messages", ErrUnsupportedKey)
	}
	row, found, err := cas.ReadSerial(ctx, a.session.Query(a.read, namespace, key), a.cfg.serial)
	if err != nil {
		return Replayed{}, err
	}
	status, _ := row["status"].(string)
	if !found || lwt.Status(status) != lwt.StatusCompleted {
		return Replayed{}, fmt.Errorf("%w: %s/%s is %s", ErrNotFound, namespace, key, orNone(status))
	}
	in := intent{namespace: namespace, key: key}
	in.owner, _ = row["owner"].(gocql.UUID)
	in.fence, _ = row["fence"].(int64)
	v := a.committed(in, row)
	if v.err != nil {
		return Replayed{}, v.err
	}
	if len(v.msgs) == 0 {
		return Replayed{}, fmt.Errorf("%w: %s/%s committed no events", ErrNotFound, namespace, key)
	}
	// The intent carries the committed events: the relay publishes them even if the record
	// expires first.
	return a.requeue(ctx, in, v.msgs, v.cell, dryRun)
}

// requeue writes a pending intent of in's operation in the current bucket, or re-opens the one
// there: with cell (a parked copy), marked committed so the relay publishes the copy without
// reading the record; without, settled by the record as any intent.
func (a *Admin) requeue(ctx context.Context, in intent, msgs []Message, cell []byte, dryRun bool) (Replayed, error) {
	if _, err := a.cfg.checkClock(ctx); err != nil {
		return Replayed{}, err
	}
	now := a.cfg.now()
	// Under WithKeyOrder the events go in their key's shard, and in its order as staged now:
	// after every event of the key staged before the replay.
	orderKey := a.cfg.orderKeyOf(msgs)
	b, s := a.cfg.bucketOf(now), a.cfg.intentShard(in.namespace, in.key, orderKey)
	out := Replayed{Messages: msgs, Bucket: time.Unix(b, 0).UTC(), Shard: s}
	if dryRun {
		return out, nil
	}
	committed := cell != nil
	var rec *string
	if in.record != "" {
		rec = &in.record
	}
	// A copy needs no record: its intent lives as a staged one whose record expires now (a
	// grace and a bucket more), and the relay's marks keep that expiry. One settled by the
	// record lives as long as the record can.
	ttl, expires := a.cfg.intentTTL(), (*time.Time)(nil)
	if committed {
		ttl, expires = a.cfg.ttlUntil(a.cfg.rowExpiry(now)), &now
	}
	// Conditional writes only: the row may carry a relay's conditional mark already.
	applied, _, err := cas.InsertIfNotExists(ctx, a.session.Query(a.insertIfNot, b, s, in.namespace, in.key, in.fence, in.owner, now,
		rec, committed, cell, expires, orderKeyValue(orderKey), ttl).Consistency(a.cfg.consistency), a.cfg.serial)
	if err == nil && !applied {
		applied, _, err = cas.UpdateIf(ctx, a.session.Query(a.reopen, ttl, now, committed, cell, expires, orderKeyValue(orderKey), b, s, in.namespace, in.key, in.fence).
			Consistency(a.cfg.consistency), a.cfg.serial)
	}
	if err == nil && applied {
		// The arrival only makes a relay find the intent at once: without it, the bucket's last
		// sweep publishes it, so its failure fails nothing. Unset, not null: no tombstones.
		var recArg, expArg any = gocql.UnsetValue, gocql.UnsetValue
		if rec != nil {
			recArg = *rec
		}
		if expires != nil {
			expArg = *expires
		}
		_ = a.session.Query(a.arrive, b, s, in.namespace, in.key, in.fence, in.owner, now, recArg, expArg, committed, a.cfg.arrivalTTL()).
			WithContext(ctx).Consistency(a.cfg.consistency).Idempotent(true).Exec()
	}
	if err != nil {
		return out, fmt.Errorf("outbox: replay %q/%q: %w", in.namespace, in.key, err)
	}
	out.Changed = applied
	return out, nil
}

// checkName refuses a namespace or key the record table could not hold, in lwt's words.
func checkName(what, s string) error {
	if p := textcheck.Problem(s, lwt.DefaultMaxKeyLength); p != "" {
		return &lwt.KeyError{Column: what, Reason: p}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not found"
	}
	return s
}
