package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// The operator's view of a guard: what the cassdedup command's message subcommands do, for
// services that need it in code. Each delegates to the guard's lwt.Store, so the rules of
// lwt.Store.Inspect, ReleaseKey, Delete and ScanStuck apply. Whether a claim's lease is live is
// judged by the cluster's clock, as Process judges it: each refuses with ErrClockOffset while the
// guard's offset from it is not known, since releasing a claim whose lease a fast host clock took
// for expired would let a second handler run beside the first.

// messageKey checks a call on message id in scope and returns the key of its record.
func (g *Guard) messageKey(ctx context.Context, scope Scope, id string) (lwt.Key, error) {
	if err := g.checkCall(ctx); err != nil {
		return nil, err
	}
	m := Message{Scope: scope, ID: id}
	if err := m.validate(0); err != nil {
		return nil, err
	}
	if err := g.checkClock(ctx); err != nil { // whether a claim's lease is live is judged by it
		return nil, err
	}
	return m.key(), nil
}

// Inspect reads the record of message id in scope at the guard's serial consistency, with
// the node's remaining TTL. It returns an error matching lwt.ErrNotFound when there is none.
func (g *Guard) Inspect(ctx context.Context, scope Scope, id string) (*lwt.Inspection, error) {
	key, err := g.messageKey(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return g.store.Inspect(ctx, key)
}

// ReleaseMessage releases the message's record (RELEASED, attempts kept), so its next
// delivery runs the handler again: a claim whose consumer died, or a poison message to retry
// after a fix. A live lease is refused with lwt.ErrInProgress unless lwt.Force is given.
func (g *Guard) ReleaseMessage(ctx context.Context, scope Scope, id string, opts ...lwt.AdminOption) (lwt.AdminResult, error) {
	key, err := g.messageKey(ctx, scope, id)
	if err != nil {
		return lwt.AdminResult{}, err
	}
	return g.store.ReleaseKey(ctx, key, opts...)
}

// DeleteMessage removes the message's record, so its next delivery is processed as new (its
// attempts start again). A live lease is refused with lwt.ErrInProgress unless lwt.Force is
// given. The by-scope index keeps the id, which only makes a warm-up admit it as maybe seen.
func (g *Guard) DeleteMessage(ctx context.Context, scope Scope, id string, opts ...lwt.AdminOption) (lwt.AdminResult, error) {
	key, err := g.messageKey(ctx, scope, id)
	if err != nil {
		return lwt.AdminResult{}, err
	}
	return g.store.Delete(ctx, key, opts...)
}

// ScanStuck scans processed_messages for messages whose claim is STARTED past its lease or
// RELEASED at least MinAttempts times (see lwt.Store.ScanStuck). A StuckClaim's Key is
// {group, topic, partition, id}.
func (g *Guard) ScanStuck(ctx context.Context, opts lwt.StuckOptions, yield func(lwt.StuckClaim) error) (lwt.ScanStats, error) {
	if err := g.checkCall(ctx); err != nil {
		return lwt.ScanStats{}, err
	}
	if err := g.checkClock(ctx); err != nil {
		return lwt.ScanStats{}, err
	}
	return g.store.ScanStuck(ctx, opts, yield)
}

// MessageRecord is one message ListMessages found in the by-scope index.
type MessageRecord struct {
	ID string
	// Hour is the start of the index's hour bucket (earlier releases) or window in which the id
	// was first found.
	Hour time.Time
	// Record is the message's record; nil when there is none (it expired, or its claim never
	// applied: the index row is written while the claim is in flight).
	Record *lwt.Inspection
}

// ListMessages calls yield with each message id in scope's by-scope index (see ProcessedIDs:
// messages recorded in the bucketed table are not there) from the hour of since on
// (within the retention), oldest hour or window first, each id once, with its record read at the serial
// consistency. An error from yield stops the walk and is returned; return one to stop after
// enough. Each message costs a serial read: bound the walk.
func (g *Guard) ListMessages(ctx context.Context, scope Scope, since time.Time, yield func(MessageRecord) error) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if err := (Message{Scope: scope, ID: "-"}).validate(0); err != nil {
		return err
	}
	if err := g.checkClock(ctx); err != nil {
		return err
	}
	seen := map[string]bool{}
	return g.walkIndex(ctx, scope, since, func(id string, hour, _ time.Time) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		in, err := g.Inspect(ctx, scope, id)
		if err != nil && !errors.Is(err, lwt.ErrNotFound) {
			return fmt.Errorf("guard: list %s/%s/%d: %w", scope.Group, scope.Topic, scope.Partition, err)
		}
		return yield(MessageRecord{ID: id, Hour: hour, Record: in})
	})
}
