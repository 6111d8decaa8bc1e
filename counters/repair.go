package counters

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// Claim is an operation claimed but not marked applied: either the process stopped before the
// increment, or after it and before the mark. The store cannot tell which.
type Claim struct {
	Counter   string
	OpID      string
	Delta     int64
	ClaimedAt time.Time
	// Owner is the claim's owner token; it names the attempt that made it.
	Owner gocql.UUID
	// Settling reports a claim that Settle took over and did not mark: the repair stopped
	// between its steps, or is running now. Settle it again with ResettleStuck.
	Settling bool
}

// MaxListLimit bounds one ListUnapplied call.
const MaxListLimit = 10000

// ListUnapplied returns up to limit operations claimed in [from, to) and still not marked
// applied, oldest hour first. Pass a to well in the past (for example now minus a minute) so
// increments still in flight are not reported. The cost is one index read per hour and
// shard, plus one serial read per claim found; from must lie within the retention window.
func (s *Store) ListUnapplied(ctx context.Context, from, to time.Time, limit int) ([]Claim, error) {
	if err := s.checkCall(ctx); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, fmt.Errorf("%w: limit %d must be 1..%d", ErrInvalidOption, limit, MaxListLimit)
	}
	if !from.Before(to) || to.Sub(from) > s.cfg.retention+time.Hour {
		return nil, fmt.Errorf("%w: range [%v, %v) must be non-empty and within the retention", ErrInvalidOption, from, to)
	}
	var out []Claim
	for hour := from.UTC().Truncate(time.Hour); hour.Before(to); hour = hour.Add(time.Hour) {
		for shard := range s.cfg.shards {
			var err error
			if out, err = s.listShard(ctx, hour, shard, from, to, limit, out); err != nil {
				return nil, err
			}
			if len(out) >= limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// listShard appends the unapplied claims of one index partition to out.
func (s *Store) listShard(ctx context.Context, hour time.Time, shard int, from, to time.Time, limit int, out []Claim) ([]Claim, error) {
	iter := s.session.Query(s.q.listIndex, hour, shard).WithContext(ctx).
		Consistency(s.cfg.consistency).PageSize(500).Iter()
	var counter, opID string
	for len(out) < limit && iter.Scan(&counter, &opID) {
		c, pending, err := s.readClaim(ctx, counter, opID)
		if err != nil {
			_ = iter.Close()
			return nil, err
		}
		if pending && !c.ClaimedAt.Before(from) && c.ClaimedAt.Before(to) {
			out = append(out, c)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("counters: list claims of %v shard %d: %w", hour, shard, err)
	}
	return out, nil
}

// readClaim reads one claim and reports whether it is still unmarked. An index row whose
// claim is gone was released or expired, or its claim never applied: nothing to repair. The
// read is serial: a claim, mark or release whose Paxos round a crash interrupted (accepted, not
// committed) is invisible to a plain read until a Paxos round on the partition finishes it, and
// the serial read is that round, so the listing neither misses a claim nor reports a marked one.
func (s *Store) readClaim(ctx context.Context, counter, opID string) (Claim, bool, error) {
	c := Claim{Counter: counter, OpID: opID}
	row, found, err := lwt.ReadSerial(ctx, s.session.Query(s.q.readOp, counter, opID).Consistency(s.cfg.consistency), s.cfg.serial)
	if err != nil {
		return c, false, fmt.Errorf("counters: read claim %q of %q: %w", opID, counter, err)
	}
	if !found {
		return c, false, nil
	}
	c.Delta, _ = row["delta"].(int64)
	c.Owner, _ = row["owner"].(gocql.UUID)
	c.ClaimedAt, _ = row["claimed_at"].(time.Time)
	status, _ := row["status"].(string)
	c.Settling = status == statusSettling
	return c, status == statusClaimed || c.Settling, nil
}
