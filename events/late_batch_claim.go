package events

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// batchQueries are the late batch path's statements.
type batchQueries struct {
	holds, heldLegacy, oldClaims string
	claim, move, read            string
}

// WithLateSliceTable names the table where a Log claims late events in batches (default
// "counter_late_slices"). WithLateTable names the table of earlier releases' claims, which
// is still read. Log.
func WithLateSliceTable(name string) Option {
	return func(c *config) error { c.lateSlices = name; return nil }
}

// ids returns the items' event ids.
func ids(items []*lateItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.e.ID
	}
	return out
}

// checkOwn handles items of one counter whose own window closed before their row was written
// here: once the window settled, an item whose row is there (or in the first layout) was
// recorded on time and is done; one that an earlier release claimed follows that claim alone
// (recordLate); the others go to the claim step.
func (l *Log) checkOwn(ctx context.Context, items []*lateItem) {
	e0 := items[0].e
	found, err := l.holdsAll(ctx, e0.Counter, items[0].own, items)
	if err == nil {
		err = l.heldLegacyAll(ctx, e0.Counter, items, found)
	}
	var old map[string]bool
	if err == nil {
		old, err = l.claimedBefore(ctx, e0.Counter, items[0].own, items)
	}
	var claimed map[string]time.Time
	if err == nil {
		claimed, err = l.readClaims(ctx, e0.Counter, items)
	}
	now := l.cfg.Now()
	decide(items, err, found, func(it *lateItem) {
		switch {
		case !claimed[it.e.ID].IsZero():
			// A retry: follow the claim without a Paxos round. A stale read names a window the
			// claim left, which settled without the row: the move from it is refused and
			// returns the claim's window.
			l.countLate(it)
			it.target, it.window, it.step = claimed[it.e.ID], claimed[it.e.ID], stepWrite
			if l.closed(it.e.Counter, it.target, now) {
				it.step = stepVerify
			}
		case old[it.e.ID]:
			l.countLate(it)
			if err := l.recordLate(ctx, it.e, it.own); err != nil {
				it.fail(err)
			} else {
				it.step = stepDone
			}
		default:
			it.step = stepClaim
		}
	})
}

// verifyTarget handles items of one counter whose claims name one window that closed: once
// it settled, an item whose row is there is done; the others' claims move (claim step).
func (l *Log) verifyTarget(ctx context.Context, items []*lateItem) {
	found, err := l.holdsAll(ctx, items[0].e.Counter, items[0].target, items)
	decide(items, err, found, func(it *lateItem) { it.step = stepClaim })
}

// decide moves each item on by the reads of its window: a failed read fails it, a row found
// there makes it done, and rest decides the others.
func decide(items []*lateItem, err error, found map[string]bool, rest func(*lateItem)) {
	for _, it := range items {
		switch {
		case err != nil:
			it.fail(err)
		case found[it.e.ID]:
			it.step = stepDone
		default:
			rest(it)
		}
	}
}

// holdsAll waits until window w settled, then returns the ids of items (events of counter)
// whose row is in w: one read per part of every parts value the window index lists for w.
func (l *Log) holdsAll(ctx context.Context, counter string, w time.Time, items []*lateItem) (map[string]bool, error) {
	if d := l.settledAt(counter, w).Sub(l.cfg.Now()); d > 0 {
		if err := l.late.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
	iter := l.session.Query(l.late.readParts, counter, dayOf(w), w).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	var parts []int
	var p int
	for iter.Scan(&p) {
		parts = append(parts, p)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("events: read parts of window %v of %q: %w", w, counter, err)
	}
	found := map[string]bool{}
	for _, p := range parts {
		byPart := map[int][]string{}
		for _, it := range items {
			if !found[it.e.ID] {
				part := partOf(it.e.ID, p)
				byPart[part] = append(byPart[part], it.e.ID)
			}
		}
		for part, ids := range byPart {
			q := l.session.Query(l.late.batch.holds, counter, w, part, ids)
			if err := l.scanIDs(ctx, q, found); err != nil {
				return nil, fmt.Errorf("events: look up %d events in window %v of %q: %w", len(ids), w, counter, err)
			}
		}
	}
	return found, nil
}

// heldLegacyAll adds to found the items (events of counter) that an earlier release recorded
// in the first layout, one read per bucket.
func (l *Log) heldLegacyAll(ctx context.Context, counter string, items []*lateItem, found map[string]bool) error {
	byBucket := map[time.Time][]string{}
	for _, it := range items {
		if !found[it.e.ID] {
			b := it.e.Time.UTC().Truncate(l.cfg.legacyWidth)
			byBucket[b] = append(byBucket[b], it.e.ID)
		}
	}
	for b, ids := range byBucket {
		if err := l.scanIDs(ctx, l.session.Query(l.late.batch.heldLegacy, counter, b, ids), found); err != nil {
			return fmt.Errorf("events: look up %d events in bucket %v of %q: %w", len(ids), b, counter, err)
		}
	}
	return nil
}

// claimedBefore returns the ids of items that an earlier release claimed in
// counter_late_claims (one read of the items' partitions there).
func (l *Log) claimedBefore(ctx context.Context, counter string, own time.Time, items []*lateItem) (map[string]bool, error) {
	old := map[string]bool{}
	if err := l.scanIDs(ctx, l.session.Query(l.late.batch.oldClaims, counter, own, ids(items)), old); err != nil {
		return nil, fmt.Errorf("events: read earlier late claims in %q: %w", counter, err)
	}
	return old, nil
}

// readClaims returns the targets of the claims items (events of counter) have in
// counter_late_slices, one read per second of their times.
func (l *Log) readClaims(ctx context.Context, counter string, items []*lateItem) (map[string]time.Time, error) {
	bySlice := map[time.Time][]string{}
	for _, it := range items {
		bySlice[sliceOf(it.e)] = append(bySlice[sliceOf(it.e)], it.e.ID)
	}
	out := map[string]time.Time{}
	for second, ids := range bySlice {
		iter := l.session.Query(l.late.batch.read, counter, second, ids).WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
		var id string
		var target time.Time
		for iter.Scan(&id, &target) {
			out[id] = target.UTC()
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("events: read late claims of %q at %v: %w", counter, second, err)
		}
	}
	return out, nil
}

// scanIDs adds the event ids q returns to into.
func (l *Log) scanIDs(ctx context.Context, q *gocql.Query, into map[string]bool) error {
	iter := q.WithContext(ctx).Consistency(l.cfg.Consistency).Iter()
	var id string
	for iter.Scan(&id) {
		into[id] = true
	}
	return iter.Close()
}

// claimGroup claims items, late events of one counter and one second (one partition of
// counter_late_slices), for the window open now, with one conditional batch: an INSERT ... IF
// NOT EXISTS for an item without a claim, an UPDATE ... IF target = its target for one whose
// target closed without its row. Cassandra applies the batch in one Paxos round, all of it or
// nothing. Rejected, it returns the rows its conditions read: an item whose row another writer
// claimed or moved takes that row's target, as every writer does, and the others go in the next
// batch. Each item then writes into its target if that is open, or checks it once it settled.
func (l *Log) claimGroup(ctx context.Context, items []*lateItem) {
	left := items
	for round := 0; len(left) > 0 && round < maxLateRounds; round++ {
		var err error
		if left, err = l.claimRound(ctx, left); err != nil {
			for _, it := range left {
				it.fail(err)
			}
			return
		}
	}
	now := l.cfg.Now()
	for _, it := range items {
		switch {
		case it.step != stepClaim: // failed
		case len(left) > 0 && contains(left, it):
			// Raced past maxLateRounds: recordItems reports it in progress.
		case l.closed(it.e.Counter, it.target, now):
			it.step = stepVerify
		default:
			it.window, it.step = it.target, stepWrite
		}
	}
	for _, it := range items {
		l.countLate(it)
	}
}

// contains reports whether items holds it.
func contains(items []*lateItem, it *lateItem) bool {
	for _, x := range items {
		if x == it {
			return true
		}
	}
	return false
}

// claimRound sends one conditional batch for items and returns those still to claim. An item
// claimed or moved by this batch or another writer's gets that target; a claim is marked
// moved (its from cleared) by giving it a target other than the one it had.
func (l *Log) claimRound(ctx context.Context, items []*lateItem) ([]*lateItem, error) {
	e0 := items[0].e
	second := sliceOf(e0)
	if err := l.startedWidths(ctx, e0.Counter, l.cfg.Now()); err != nil {
		return items, err
	}
	now := l.cfg.Now()
	mine := l.windowOf(e0.Counter, now)
	b, ttl := l.session.NewBatch(gocql.UnloggedBatch), l.rowTTL()
	for _, it := range items {
		if it.target.IsZero() {
			b.Query(l.late.batch.claim, it.e.Counter, second, it.e.ID, it.own, mine, now.UTC(), ttl)
		} else {
			b.Query(l.late.batch.move, ttl, mine, now.UTC(), it.e.Counter, second, it.e.ID, it.target)
		}
	}
	l.stats.lateRounds.Add(1)
	applied, rows, err := cas.ResolveBatch(ctx, cas.BatchConditional{
		Op: "late claim batch", Session: l.session, Batch: b,
		Read: l.session.Query(l.late.batch.read, e0.Counter, second, ids(items)),
		Applied: func(rows []cas.Row) bool {
			got := targetsByID(rows)
			for _, it := range items {
				if t, ok := got[it.e.ID]; !ok || !t.Equal(mine) {
					return false
				}
			}
			return true
		},
		Patience: rollupPatience, Observe: observe.ObserveCAS(l.cfg.Observer, observe.Key{e0.Counter, second}),
	}, l.cfg.Consistency, l.cfg.Serial)
	if err != nil {
		return items, fmt.Errorf("events: late claim of %d events of %q at %v: %w", len(items), e0.Counter, second, err)
	}
	if applied {
		for _, it := range items {
			it.target = mine
		}
		return nil, nil
	}
	return followTargets(items, targetsByID(rows)), nil
}

// targetsByID returns the target of each late claim row of rows, by event id.
func targetsByID(rows []cas.Row) map[string]time.Time {
	m := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		if id, ok := r["event_id"].(string); ok {
			m[id] = targetOf(r)
		}
	}
	return m
}

// followTargets gives each item the target another writer claimed or moved it to (got, read
// after a rejected batch) and returns the items still to claim.
func followTargets(items []*lateItem, got map[string]time.Time) []*lateItem {
	var left []*lateItem
	for _, it := range items {
		t, ok := got[it.e.ID]
		switch {
		case ok && !t.IsZero() && (it.target.IsZero() || !t.Equal(it.target)):
			it.target = t // claimed, or moved, by another writer: every writer follows it
		default:
			left = append(left, it)
		}
	}
	return left
}
