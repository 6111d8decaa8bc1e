package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
)

// Parked is an operation's events set aside by a relay: their publication failed too often
// (ReasonPoison, ReasonStalled), or their record expired before a relay settled them
// (ReasonExpired: whether the run committed is unknown). They stay until an operator replays
// (Admin.Unpark) or discards (Admin.Discard) them.
type Parked struct {
	Namespace, Key string
	Record         string // the record's table when not the records table (a guard's)
	Fence          int64
	Shard          int // the operation's shard, outbox_parked's partition (under WithKeyOrder its intent was in its events' key's)
	StagedAt       time.Time
	ParkedAt       time.Time
	Reason         string
	Attempts       int
	LastError      string
	Messages       []Message // the events, with the ids every publication of them carries
	Err            error     // the events could not be decoded
}

type parkedStatements struct {
	list, get, remove string
}

func newParkedStatements(cfg config) parkedStatements {
	t := cfg.q.parked
	cols := "namespace, key, fence, owner, record, staged_at, parked_at, reason, attempts, last_error, events FROM " + t
	return parkedStatements{
		list:   "SELECT " + cols + " WHERE intents = ? AND shard = ?",
		get:    "SELECT " + cols + " WHERE intents = ? AND shard = ? AND namespace = ? AND key = ?",
		remove: "DELETE FROM " + t + " WHERE intents = ? AND shard = ? AND namespace = ? AND key = ? AND fence = ?",
	}
}

// ListParked calls fn for every parked operation, shard by shard (one partition each, read in
// pages). fn's error stops the listing and is returned.
func (a *Admin) ListParked(ctx context.Context, fn func(Parked) error) error {
	if err := a.ready(ctx); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil fn", ErrInvalidOption)
	}
	for s := 0; s < a.cfg.shards; s++ {
		if err := a.scanParked(ctx, a.session.Query(a.parked.list, a.cfg.intents, s), s, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanParked calls fn for each parked row q reads.
func (a *Admin) scanParked(ctx context.Context, q *gocql.Query, s int, fn func(Parked) error) error {
	iter := q.WithContext(ctx).Consistency(a.cfg.consistency).PageSize(100).Iter()
	var p Parked
	var owner gocql.UUID
	var rec, lastErr *string
	var attempts *int
	var cellBytes []byte
	for iter.Scan(&p.Namespace, &p.Key, &p.Fence, &owner, &rec, &p.StagedAt, &p.ParkedAt, &p.Reason, &attempts, &lastErr, &cellBytes) {
		p.Shard, p.Record, p.LastError, p.Attempts, p.Messages, p.Err = s, deref(rec), deref(lastErr), deref(attempts), nil, nil
		c, err := decodeCell(cellBytes)
		if err != nil {
			p.Err = err
		} else {
			p.Messages = c.messages(p.Namespace, p.Key, p.Fence)
		}
		if err := fn(p); err != nil {
			_ = iter.Close()
			return err
		}
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("outbox: read parked events of shard %d: %w", s, err)
	}
	return nil
}

// parkedOf reads the parked rows of one operation (one per fence, usually one).
func (a *Admin) parkedOf(ctx context.Context, namespace, key string) ([]Parked, [][]byte, error) {
	s := shardOf(namespace, key, a.cfg.shards)
	var out []Parked
	var cells [][]byte
	err := a.scanParked(ctx, a.session.Query(a.parked.get, a.cfg.intents, s, namespace, key), s, func(p Parked) error {
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range out {
		if p.Err != nil {
			return nil, nil, fmt.Errorf("outbox: parked %q/%q: %w", namespace, key, p.Err)
		}
		b, err := encodeCell(cell{StagedAt: p.StagedAt, Events: eventsOf(p.Messages)})
		if err != nil {
			return nil, nil, err
		}
		cells = append(cells, b)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: nothing parked for %q/%q", ErrNotFound, namespace, key)
	}
	return out, cells, nil
}

func eventsOf(msgs []Message) []Event {
	out := make([]Event, len(msgs))
	for i, m := range msgs {
		out[i] = Event{Type: m.Type, Key: m.Key, Payload: m.Payload, Headers: m.Headers}
	}
	return out
}

// Unpark hands an operation's parked events back to the relay: a pending intent in the current
// bucket carries their copy, so the relay publishes them (with the same ids) without reading
// the record, and the parked row is deleted. For an event parked as ReasonExpired that is the
// operator's decision that its run committed. With dryRun it only reads. ErrNotFound when
// nothing is parked for the operation.
func (a *Admin) Unpark(ctx context.Context, namespace, key string, dryRun bool) (Replayed, error) {
	if err := a.readyFor(ctx, namespace, key); err != nil {
		return Replayed{}, err
	}
	ps, cells, err := a.parkedOf(ctx, namespace, key)
	if err != nil {
		return Replayed{}, err
	}
	var out Replayed
	for i, p := range ps {
		in := intent{namespace: p.Namespace, key: p.Key, fence: p.Fence, record: p.Record}
		res, err := a.requeue(ctx, in, p.Messages, cells[i], dryRun)
		if err != nil {
			return out, err
		}
		out.Messages, out.Bucket, out.Shard = append(out.Messages, res.Messages...), res.Bucket, res.Shard
		out.Changed = out.Changed || res.Changed
		if !dryRun {
			if err := a.removeParked(ctx, p); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Discard deletes an operation's parked events for good: they are never published. With
// dryRun it only reads. It returns what was (or would be) discarded; ErrNotFound when nothing
// is parked for the operation.
func (a *Admin) Discard(ctx context.Context, namespace, key string, dryRun bool) ([]Parked, error) {
	if err := a.readyFor(ctx, namespace, key); err != nil {
		return nil, err
	}
	ps, _, err := a.parkedOf(ctx, namespace, key)
	if err != nil || dryRun {
		return ps, err
	}
	for _, p := range ps {
		if err := a.removeParked(ctx, p); err != nil {
			return ps, err
		}
	}
	return ps, nil
}

func (a *Admin) removeParked(ctx context.Context, p Parked) error {
	err := a.session.Query(a.parked.remove, a.cfg.intents, p.Shard, p.Namespace, p.Key, p.Fence).WithContext(ctx).
		Consistency(a.cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return fmt.Errorf("outbox: remove parked %q/%q: %w", p.Namespace, p.Key, err)
	}
	return nil
}
