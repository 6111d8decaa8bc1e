package counters

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt/observe"
	"github.com/cassdedup/cassdedup/schema"
)

// Store increments native counters at most once per operation id. A Store is safe for
// concurrent use.
type Store struct {
	session *gocql.Session
	cfg     config
	q       queries
	hooks   hooks
}

// hooks let tests stop an increment between its steps, as a crash would.
type hooks struct {
	afterClaim, afterIncrement func() error
}

type queries struct {
	insertIndex, claim, readOp, release, mark, takeover string
	increment, value, listIndex                         string
}

// New returns a Store over session. The tables must exist (schema.Apply creates them).
func New(session *gocql.Session, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	if err := optcheck.Build(ErrInvalidOption, session == nil, "session", &cfg, opts); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var n [3]string
	for i, t := range []string{cfg.ops, cfg.byHour, cfg.values} {
		q, err := schema.QualifiedName(cfg.keyspace, t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		n[i] = q
	}
	ops, idx, vals := n[0], n[1], n[2]
	return &Store{session: session, cfg: cfg, q: queries{
		insertIndex: "INSERT INTO " + idx + " (hour, shard, counter, op_id) VALUES (?, ?, ?, ?) USING TTL ?",
		claim: "INSERT INTO " + ops + " (counter, op_id, delta, status, owner, claimed_at) " +
			"VALUES (?, ?, ?, '" + statusClaimed + "', ?, ?) IF NOT EXISTS USING TTL ?",
		readOp:    "SELECT counter, op_id, delta, status, owner, claimed_at, applied_at FROM " + ops + " WHERE counter = ? AND op_id = ?",
		release:   "DELETE FROM " + ops + " WHERE counter = ? AND op_id = ? IF owner = ?",
		mark:      "UPDATE " + ops + " USING TTL ? SET status = '" + statusApplied + "', applied_at = ? WHERE counter = ? AND op_id = ? IF owner = ?",
		takeover:  "UPDATE " + ops + " USING TTL ? SET owner = ?, status = '" + statusSettling + "' WHERE counter = ? AND op_id = ? IF owner = ? AND status = ?",
		increment: "UPDATE " + vals + " SET value = value + ? WHERE counter = ?",
		value:     "SELECT value FROM " + vals + " WHERE counter = ?",
		listIndex: "SELECT counter, op_id FROM " + idx + " WHERE hour = ? AND shard = ?",
	}}, nil
}

const (
	statusClaimed  = "CLAIMED"
	statusApplied  = "APPLIED"
	statusSettling = "SETTLING" // taken over by Settle, which has not marked it yet
)

// shard spreads one hour's claims over the index partitions by a hash of the claim's key.
func (s *Store) shard(counter, opID string) int {
	h := fnv.New32a()
	h.Write([]byte(counter))
	h.Write([]byte{0})
	h.Write([]byte(opID))
	return int(h.Sum32() % uint32(s.cfg.shards))
}

// ttlSeconds returns the seconds left until a claim made at claimedAt expires, at least 1, so
// every cell written to the claim's row expires with the row.
func (s *Store) ttlSeconds(claimedAt time.Time) int {
	left := claimedAt.Add(s.cfg.retention).Sub(s.cfg.now())
	return max(1, int(left/time.Second))
}

// checkCall refuses a call on a nil *Store or with a nil context (lwt.ErrInvalidArgument).
func (s *Store) checkCall(ctx context.Context) error {
	return argcheck.Call(observe.ErrInvalidArgument, "*counters.Store", s == nil, ctx)
}
