package guard

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// scopePageSize bounds the rows one round trip of ProcessedIDs returns.
const scopePageSize = 1000

// ProcessedIDs calls yield with the id of every message claimed for processing in scope within
// the retention window: from the hour-bucketed index of earlier releases, oldest hour first,
// then from the windowed index, oldest window first, in pages of scopePageSize, so memory stays
// bounded whatever the volume. The ids are a superset of the ones processed through the by-scope
// index (the LWT path of Process, and the fast path of messages without a Time). Messages
// recorded in processed_messages_bucketed (the fast path of messages with a Time, and
// ProcessBatch) are not among them: a warm-up reads those from the bucketed table's windows (see
// Own). An id may be yielded more than once. An error from yield stops the walk and is returned.
// The walk reads every window and bucket of the retention (80,640 partitions for 7 days with the
// default layout, the buckets of a window in parallel): bound it with an error from yield.
func (g *Guard) ProcessedIDs(ctx context.Context, scope Scope, yield func(id string) error) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if err := (Message{Scope: scope, ID: "-"}).validate(0); err != nil {
		return err
	}
	if err := g.checkClock(ctx); err != nil { // the windows are read up to now
		return err
	}
	return g.walkIndex(ctx, scope, time.Time{}, func(id string, _, _ time.Time) error { return yield(id) })
}

// walkIndex yields the ids of scope's by-scope index from the window of from (within the
// retention) on, each with the start and end of the hour or window it was indexed in: first the
// hour buckets that earlier releases wrote, then the group's windowed layouts.
func (g *Guard) walkIndex(ctx context.Context, scope Scope, from time.Time, yield func(id string, start, end time.Time) error) error {
	now := g.cfg.Now().UTC()
	if oldest := now.Add(-g.cfg.retention); from.Before(oldest) {
		from = oldest
	}
	for hour := from.UTC().Truncate(time.Hour); !hour.After(now); hour = hour.Add(time.Hour) {
		iter := g.session.Query(g.listScope, scope.Group, scope.Topic, scope.Partition, hour).
			WithContext(ctx).Consistency(g.cfg.Consistency).PageSize(scopePageSize).Iter()
		var id string
		for iter.Scan(&id) {
			if err := yield(id, hour, hour.Add(time.Hour)); err != nil {
				_ = iter.Close()
				return err
			}
		}
		if err := iter.Close(); err != nil {
			return fmt.Errorf("guard: list scope %v at %v: %w", scope, hour, err)
		}
	}
	// The windowed index holds rows from the group's first layout on, written at their writers'
	// clocks, which may be up to the skew apart.
	to := now.Add(lwt.MaxClockSkew)
	gl, err := g.layoutsOf(ctx, scope.Group, to, false)
	if err != nil {
		return err
	}
	if first := time.Unix(gl.recorded, 0).Add(-lwt.MaxClockSkew); from.Before(first) {
		from = first
	}
	return g.walkWindows(ctx, g.listIndex, scope, from, to, yield)
}
