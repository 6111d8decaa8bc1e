package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gocql/gocql"

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

// Admin is the operator's view of the outbox: pending intents, shard cursors, and the replay of
// an operation's events. It is safe for concurrent use.
type Admin struct {
	judge
	readCursors, insertIfNot, reopen string
}

// NewAdmin returns the operator's view of the outbox tables of session.
func NewAdmin(session *gocql.Session, opts ...Option) (*Admin, error) {
	cfg, err := newConfig(session == nil, opts)
	if err != nil {
		return nil, err
	}
	j := newJudge(session, cfg)
	intents, relays := cfg.q.intents, cfg.q.relays
	return &Admin{judge: j,
		readCursors: "SELECT shard, status, fence, lease_owner, frontier, pending FROM " + relays + " WHERE relay = ? AND shard = ?",
		insertIfNot: "INSERT INTO " + intents + " (bucket, shard, namespace, key, fence, owner, staged_at) VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		reopen: "UPDATE " + intents + " USING TTL ? SET state = null, staged_at = ? WHERE bucket = ? AND shard = ? AND namespace = ? AND key = ? AND fence = ?" +
			" IF state IN ('" + StatePublished + "', '" + StateDropped + "')",
	}, nil
}

// Cursors reads the shard cursors of the relay group (WithRelayName).
func (a *Admin) Cursors(ctx context.Context) ([]ShardCursor, error) {
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
// each). fn's error stops the listing and is returned.
func (a *Admin) ListPending(ctx context.Context, since time.Time, fn func(Pending) error) error {
	cursors, err := a.Cursors(ctx)
	if err != nil {
		return err
	}
	width := int64(a.cfg.bucket / time.Second)
	buckets := map[int64]bool{}
	for b := a.cfg.bucketOf(since); b <= a.cfg.bucketOf(a.cfg.now()); b += width {
		buckets[b] = true
	}
	for _, c := range cursors {
		for _, p := range c.Pending {
			buckets[p.Unix()] = true
		}
	}
	ordered := make([]int64, 0, len(buckets))
	for b := range buckets {
		ordered = append(ordered, b)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i] < ordered[j] })
	for _, b := range ordered {
		for s := 0; s < a.cfg.shards; s++ {
			rows, _, err := a.readBucket(ctx, b, s)
			if err != nil {
				return err
			}
			for _, v := range a.settleAll(ctx, rows) {
				p := Pending{Namespace: v.in.namespace, Key: v.in.key, Record: v.in.record, Fence: v.in.fence, Bucket: time.Unix(b, 0).UTC(),
					Shard: s, StagedAt: v.in.stagedAt, Events: len(v.msgs), Err: v.err}
				p.Verdict = map[decision]string{wait: "in flight", publish: "committed", drop: "not committed"}[v.dec]
				if v.err != nil {
					p.Verdict = "unreadable"
				}
				if err := fn(p); err != nil {
					return err
				}
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
// intent for its claim in the current bucket. With dryRun it only reads. ErrNotFound when the
// record is not COMPLETED or carries no events.
func (a *Admin) Replay(ctx context.Context, namespace, key string, dryRun bool) (Replayed, error) {
	if err := errors.Join(checkName("namespace", namespace), checkName("key", key)); err != nil {
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
	now := a.cfg.now()
	b, s := a.cfg.bucketOf(now), shardOf(namespace, key, a.cfg.shards)
	out := Replayed{Messages: v.msgs, Bucket: time.Unix(b, 0).UTC(), Shard: s}
	if dryRun {
		return out, nil
	}
	// Conditional writes only: the row may carry a relay's conditional mark already.
	applied, _, err := cas.InsertIfNotExists(ctx, a.session.Query(a.insertIfNot, b, s, namespace, key, in.fence, in.owner, now,
		a.cfg.intentTTL()).Consistency(a.cfg.consistency), a.cfg.serial)
	if err == nil && !applied {
		applied, _, err = cas.UpdateIf(ctx, a.session.Query(a.reopen, a.cfg.intentTTL(), now, b, s, namespace, key, in.fence).
			Consistency(a.cfg.consistency), a.cfg.serial)
	}
	if err != nil {
		return out, fmt.Errorf("outbox: replay %s/%s: %w", namespace, key, err)
	}
	out.Changed = applied
	return out, nil
}

func checkName(what, s string) error {
	if s == "" || len(s) > lwt.DefaultMaxKeyLength {
		return fmt.Errorf("%w: %s must be 1 to %d bytes", lwt.ErrInvalidKey, what, lwt.DefaultMaxKeyLength)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "not found"
	}
	return s
}
