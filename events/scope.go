package events

import (
	"context"
	"fmt"
	"time"
)

// scopePageSize bounds the rows one round trip of ProcessedIDs returns.
const scopePageSize = 1000

// ProcessedIDs calls yield with the id of every message claimed for processing in scope within
// the retention window, oldest hour first, reading one hour bucket at a time in pages of
// scopePageSize, so memory stays bounded whatever the volume. The ids are a superset of the
// ones processed through the by-scope index (the LWT path of Process, and the fast path of
// messages without a Time). Messages recorded in processed_messages_bucketed (the fast path of
// messages with a Time, and ProcessBatch) are not among them: a warm-up reads those from the
// bucketed table's windows (see Own). An id may be yielded more than once. An error from yield
// stops the walk and is returned.
func (g *Guard) ProcessedIDs(ctx context.Context, scope Scope, yield func(id string) error) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if err := (Message{Scope: scope, ID: "-"}).validate(0); err != nil {
		return err
	}
	return g.walkScope(ctx, scope, func(id string, _ time.Time) error { return yield(id) })
}

// walkScope is ProcessedIDs with each id's hour bucket.
func (g *Guard) walkScope(ctx context.Context, scope Scope, yield func(id string, hour time.Time) error) error {
	return g.walkScopeFrom(ctx, scope, g.cfg.now().Add(-g.cfg.retention), yield)
}

// walkScopeFrom is walkScope from the hour of from (within the retention) on.
func (g *Guard) walkScopeFrom(ctx context.Context, scope Scope, from time.Time, yield func(id string, hour time.Time) error) error {
	now := g.cfg.now().UTC()
	if oldest := now.Add(-g.cfg.retention); from.Before(oldest) {
		from = oldest
	}
	for hour := from.UTC().Truncate(time.Hour); !hour.After(now); hour = hour.Add(time.Hour) {
		iter := g.session.Query(g.listScope, scope.Group, scope.Topic, scope.Partition, hour).
			WithContext(ctx).Consistency(g.cfg.consistency).PageSize(scopePageSize).Iter()
		var id string
		for iter.Scan(&id) {
			if err := yield(id, hour); err != nil {
				_ = iter.Close()
				return err
			}
		}
		if err := iter.Close(); err != nil {
			return fmt.Errorf("events: list scope %v at %v: %w", scope, hour, err)
		}
	}
	return nil
}
