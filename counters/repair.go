package counters

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/parallel"
	"github.com/cassdedup/cassdedup/lwt/cas"
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

// The claim index of earlier releases: hour buckets over 16 shards. Its rows lie at whole hours
// in shards 0 to 15, which a listing reads too, until they expire.
const (
	legacyBucket = time.Hour
	legacyShards = 16
)

// listConcurrency bounds the index partitions one listing reads at once.
const listConcurrency = 16

// ListUnapplied returns up to limit operations claimed in [from, to) and still not marked
// applied, oldest bucket first. Pass a to well in the past (for example now minus a minute) so
// increments still in flight are not reported. The cost is one index read per bucket and
// shard (768 per hour with the defaults, 16 at a time), plus one serial read per claim found;
// from must lie within the retention window.
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
	var err error
	start := from.UTC().Truncate(s.cfg.bucket)
	if h := from.UTC().Truncate(legacyBucket); h.Before(start) {
		if out, err = s.listBucket(ctx, h, from, to, limit, out); err != nil || len(out) >= limit {
			return out, err
		}
	}
	for b := start; b.Before(to); b = b.Add(s.cfg.bucket) {
		if out, err = s.listBucket(ctx, b, from, to, limit, out); err != nil || len(out) >= limit {
			return out, err
		}
	}
	return out, nil
}

// listBucket appends the unapplied claims of one bucket's shards to out, in shard order. A
// bucket at a whole hour also holds the hour-bucketed index's rows, in its first 16 shards.
func (s *Store) listBucket(ctx context.Context, bucket, from, to time.Time, limit int, out []Claim) ([]Claim, error) {
	shards := s.cfg.shards
	if bucket.Equal(bucket.Truncate(legacyBucket)) {
		shards = max(shards, legacyShards)
	}
	found := make([][]Claim, shards)
	err := parallel.ForEach(ctx, shards, listConcurrency, func(ctx context.Context, shard int) error {
		var err error
		found[shard], err = s.listShard(ctx, bucket, shard, from, to, limit-len(out), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, cs := range found {
		out = append(out, cs[:min(len(cs), limit-len(out))]...)
	}
	return out, nil
}

// listShard appends the unapplied claims of one index partition to out.
func (s *Store) listShard(ctx context.Context, bucket time.Time, shard int, from, to time.Time, limit int, out []Claim) ([]Claim, error) {
	iter := s.session.Query(s.q.listIndex, bucket, shard).WithContext(ctx).
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
		return nil, fmt.Errorf("counters: list claims of %v shard %d: %w", bucket, shard, err)
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
	row, found, err := cas.ReadSerial(ctx, s.session.Query(s.q.readOp, counter, opID).Consistency(s.cfg.consistency), s.cfg.serial)
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
