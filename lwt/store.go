package lwt

import (
	"context"
	"fmt"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"math"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// Store runs the record state machine on one table. Every transition is a lightweight
// transaction conditioned on the claim's owner and fence, so a stale worker's write fails
// instead of overwriting. A Store is safe for concurrent use and starts no goroutines of its
// own; ExecuteOnce starts one per call to renew the lease and stops it before returning.
type Store struct {
	session *gocql.Session
	cfg     config
	keyCols []string
	stmt    statements
	adm     adminStatements
	cache   *completedCache
	stats   counters
	fast    fastState
	// completionCols are the table's CompletionColumns (a run's Completion may set them);
	// completionQuoted maps each to its quoted name.
	completionCols   map[string]bool
	completionQuoted map[string]string
	table            Table // as given to NewStore, for a run's Completion.Table
	own              ownerStatements
	holder           gocql.UUID // this store's identity in scope_owners
	born             time.Time  // the origin of the monotonic clock of ownership deadlines
}

type statements struct {
	insert, takeover, reclaim, lease, renew, finish, read, put, putIfNotExists string
	// commitNew is a repeatable run's one write: the final record, IF NOT EXISTS.
	commitNew string
}

// NewStore returns a store over table, which must have the record columns of
// schema/cql/001_idempotency_keys.cql. The options' defaults are documented with each option;
// the lease may not exceed the retention.
func NewStore(session *gocql.Session, table Table, opts ...StoreOption) (*Store, error) {
	if session == nil {
		return nil, fmt.Errorf("%w: nil session", ErrInvalidArgument)
	}
	qualified, keyCols, err := table.validate()
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(optcheck.Unwrap(opts, StoreOption.storeOption))
	if err != nil {
		return nil, err
	}
	extra, err := table.completionColumns()
	if err != nil {
		return nil, err
	}
	s := &Store{session: session, cfg: cfg, keyCols: keyCols, stmt: buildStatements(qualified, keyCols), completionQuoted: extra,
		completionCols: map[string]bool{}, table: table}
	for c, q := range extra {
		s.completionCols[c] = true
		// A new claim nulls the completion cells with the result, so none outlives its completion.
		s.stmt.takeover = strings.Replace(s.stmt.takeover, "result = null,", "result = null, "+q+" = null,", 1)
		s.stmt.reclaim = strings.Replace(s.stmt.reclaim, "result = null,", "result = null, "+q+" = null,", 1)
	}
	if s.own, err = buildOwnerStatements(table.Keyspace, cfg.ownersTable); err != nil {
		return nil, err
	}
	s.holder, s.born = newHolder(), time.Now()
	s.adm = buildAdminStatements(qualified, keyCols, s.stmt.read)
	if cfg.cacheSize > 0 {
		var clock func() time.Time // nil: the cache times entries on the monotonic clock
		if cfg.clockSet {
			clock = cfg.now
		}
		s.cache = newCompletedCache(cfg.cacheSize, clock)
	}
	return s, nil
}

func buildStatements(table string, keyCols []string) statements {
	where := strings.Join(keyCols, " = ? AND ") + " = ?"
	marks := strings.Repeat("?, ", len(keyCols))
	// A claim is a conditional batch of the record's cells, with the record's TTL, and the lease
	// cells (lease_owner, lease_until), with the lease's: Cassandra's clock ends the lease.
	// A new claim rewrites every record cell (result to null) so the record shares the new expiry.
	claimSet := " SET fingerprint = ?, status = 'STARTED', owner = ?, fence = ?, attempts = ?, result = null, created_at = ?, updated_at = ?, expires_at = ? WHERE " + where
	st := statements{
		insert: "INSERT INTO " + table + " (" + strings.Join(keyCols, ", ") +
			", fingerprint, status, owner, fence, attempts, created_at, updated_at, expires_at) VALUES (" +
			marks + "?, 'STARTED', ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		// Only once the server has expired the lease cell may a STARTED claim be taken over.
		takeover: "UPDATE " + table + " USING TTL ?" + claimSet + " IF owner = ? AND fence = ? AND status = 'STARTED' AND lease_owner = null",
		reclaim:  "UPDATE " + table + " USING TTL ?" + claimSet + " IF owner = ? AND fence = ? AND status = 'RELEASED'",
		lease:    "UPDATE " + table + " USING TTL ? SET lease_owner = ?, lease_until = ? WHERE " + where,
		renew: "UPDATE " + table + " USING TTL ? SET lease_owner = ?, lease_until = ? WHERE " +
			where + " IF owner = ? AND fence = ? AND status = 'STARTED'",
		finish: "UPDATE " + table + " USING TTL ? SET status = ?, result = ?, updated_at = ? WHERE " +
			where + finishCondition,
		read: "SELECT fingerprint, status, owner, fence, lease_until, attempts, result, created_at, updated_at, expires_at, epoch, lease_owner FROM " +
			table + " WHERE " + where,
		put: "INSERT INTO " + table + " (" + strings.Join(keyCols, ", ") +
			", fingerprint, status, owner, fence, lease_until, attempts, result, created_at, updated_at, expires_at, epoch) VALUES (" +
			marks + "?, 'COMPLETED', ?, 0, ?, 1, ?, ?, ?, ?, ?) USING TTL ?",
	}
	st.commitNew = "INSERT INTO " + table + " (" + strings.Join(keyCols, ", ") +
		", fingerprint, status, owner, fence, attempts, result, created_at, updated_at, expires_at) VALUES (" +
		marks + "?, ?, ?, ?, 1, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?"
	st.putIfNotExists = strings.Replace(st.put, ") USING TTL", ") IF NOT EXISTS USING TTL", 1)
	return st
}

// Get reads the record of key at the store's serial consistency, so it sees the outcome of any
// conditional write in flight. It returns an error matching ErrNotFound when there is none. It
// is Inspect without the operator's view: the same read.
func (s *Store) Get(ctx context.Context, key Key) (*Record, error) {
	in, err := s.Inspect(ctx, key)
	if err != nil {
		return nil, err
	}
	return &in.Record, nil
}

// MaxResultSize is the largest result, in bytes, the store keeps (WithMaxResultSize): a layer
// that stores its own encoding as the result (package httpidem's responses) checks its limit
// against it when it is built.
func (s *Store) MaxResultSize() int { return s.cfg.maxResult }

// ttlSeconds is the TTL that makes a cell written at now expire at expires. Every write of a
// record derives its TTL from the same expires, so all cells expire within the TTL's
// one-second resolution of each other.
func ttlSeconds(expires, now time.Time) int {
	return int(math.Ceil(expires.Sub(now).Seconds()))
}

// now is the store's clock.
func (s *Store) now() time.Time { return s.cfg.now() }

// observe is the Observer that Resolve reports to: the store's counters and the user's observer.
func (s *Store) observe() Observer { return ObserverFunc(s.record) }

// observeCAS reports the events of a conditional write on key to the store's statistics and
// observer.
func (s *Store) observeCAS(key Key) func(cas.Event) {
	return func(e cas.Event) { s.record(observe.FromEvent(e, key)) }
}

// holds returns the test Resolve applies after an unknown outcome: the record shows c's owner
// and fence in status to, so the write (ours alone, by the random owner) applied.
func holds(c *Claim, to Status) func(cas.Row, bool) bool {
	return func(row cas.Row, found bool) bool {
		if !found {
			return false
		}
		r := recordFromRow(row)
		return r.Owner == c.Owner && r.Fence == c.Fence && r.Status == to
	}
}

// leaseTTL is the TTL of the lease cells written at now: the lease in whole seconds, rounded up,
// plus one, and never past the record's own expiry. Cassandra counts a TTL from the current
// whole second, so a cell with TTL n lives between n-1 and n seconds; the extra second makes
// the server hold a lease at least as long as the lease.
func (s *Store) leaseTTL(c *Claim, now time.Time) int {
	return min(leaseSeconds(s.cfg.lease), ttlSeconds(c.ExpiresAt, now))
}

// leaseSeconds is the TTL of a lease cell for a lease of d: its whole seconds rounded up, plus
// the one second Cassandra may take off by counting from the current whole second.
func leaseSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) + 1 }

// resolve runs a conditional write of the record of key through Resolve.
func (s *Store) resolve(ctx context.Context, op string, key Key, write *gocql.Query, applied func(cas.Row, bool) bool, patience time.Duration) (bool, cas.Row, error) {
	return cas.Resolve(ctx, cas.Conditional{
		Op: op, Write: write, Read: s.session.Query(s.stmt.read, key...), Applied: applied,
		Patience: patience, Observe: s.observeCAS(key),
	}, s.cfg.commit, s.cfg.serial)
}

// resolveClaim runs a claim: the conditional statement write of the record's cells, batched
// with the lease cells, through ResolveBatch. It returns whether c now holds the key and the
// row Cassandra returned (or the serial read found) otherwise.
func (s *Store) resolveClaim(ctx context.Context, op string, c *Claim, now time.Time, write string, args []any) (bool, cas.Row, error) {
	b := s.session.NewBatch(gocql.UnloggedBatch)
	b.Query(write, args...)
	b.Query(s.stmt.lease, append([]any{s.leaseTTL(c, now), c.Owner, c.LeaseUntil}, c.Key...)...)
	mine := holds(c, StatusStarted)
	applied, rows, err := cas.ResolveBatch(ctx, cas.BatchConditional{
		Op: op, Session: s.session, Batch: b, Read: s.session.Query(s.stmt.read, c.Key...),
		Applied:  func(rows []cas.Row) bool { return len(rows) > 0 && mine(rows[0], true) },
		Patience: s.claimPatience(), Observe: s.observeCAS(c.Key),
	}, s.cfg.commit, s.cfg.serial)
	if err != nil || applied || len(rows) == 0 {
		return applied, nil, err
	}
	return false, rows[0], nil
}

// checkCall refuses a call on a nil *Store or with a nil context, with ErrInvalidArgument
// rather than a panic deep inside the driver.
func (s *Store) checkCall(ctx context.Context) error {
	return argcheck.Call(ErrInvalidArgument, "*lwt.Store", s == nil, ctx)
}
