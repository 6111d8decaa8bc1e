package lwt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gocql/gocql"
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
	cache   *completedCache
	stats   counters
	fast    fastState
}

type statements struct {
	insert, takeover, renew, finish, read, put, putIfNotExists string
}

// NewStore returns a store over table, which must have the record columns of
// schema/cql/001_idempotency_keys.cql. The options' defaults are documented with each option;
// the lease may not exceed the retention.
func NewStore(session *gocql.Session, table Table, opts ...Option) (*Store, error) {
	if session == nil {
		return nil, errors.New("lwt: nil session")
	}
	qualified, keyCols, err := table.validate()
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.lease > cfg.retention {
		return nil, fmt.Errorf("lwt: lease %v exceeds retention %v", cfg.lease, cfg.retention)
	}
	s := &Store{session: session, cfg: cfg, keyCols: keyCols, stmt: buildStatements(qualified, keyCols)}
	if cfg.cacheSize > 0 {
		s.cache = newCompletedCache(cfg.cacheSize)
	}
	return s, nil
}

func buildStatements(table string, keyCols []string) statements {
	where := strings.Join(keyCols, " = ? AND ") + " = ?"
	marks := strings.Repeat("?, ", len(keyCols))
	st := statements{
		insert: "INSERT INTO " + table + " (" + strings.Join(keyCols, ", ") +
			", fingerprint, status, owner, fence, lease_until, attempts, created_at, updated_at, expires_at) VALUES (" +
			marks + "?, 'STARTED', ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?",
		// A new claim rewrites every cell (result to null) so the whole record shares the new expiry.
		takeover: "UPDATE " + table + " USING TTL ? SET fingerprint = ?, status = 'STARTED', owner = ?, fence = ?, lease_until = ?, attempts = ?, result = null, created_at = ?, updated_at = ?, expires_at = ? WHERE " +
			where + " IF owner = ? AND fence = ? AND status = ?",
		renew: "UPDATE " + table + " USING TTL ? SET lease_until = ?, updated_at = ? WHERE " +
			where + " IF owner = ? AND fence = ? AND status = 'STARTED'",
		finish: "UPDATE " + table + " USING TTL ? SET status = ?, result = ?, lease_until = ?, updated_at = ? WHERE " +
			where + " IF owner = ? AND fence = ? AND status = 'STARTED'",
		read: "SELECT fingerprint, status, owner, fence, lease_until, attempts, result, created_at, updated_at, expires_at, epoch FROM " +
			table + " WHERE " + where,
		put: "INSERT INTO " + table + " (" + strings.Join(keyCols, ", ") +
			", fingerprint, status, owner, fence, lease_until, attempts, result, created_at, updated_at, expires_at, epoch) VALUES (" +
			marks + "?, 'COMPLETED', ?, 0, ?, 1, ?, ?, ?, ?, ?) USING TTL ?",
	}
	st.putIfNotExists = strings.Replace(st.put, ") USING TTL", ") IF NOT EXISTS USING TTL", 1)
	return st
}

const maxFingerprint = 1024

// Claim is the right to run the operation of one key, held until LeaseUntil unless renewed.
// Pass Fence to downstream systems that can reject stale writers (a fencing token).
type Claim struct {
	Key        Key
	Owner      gocql.UUID // random per claim: proves which attempt wrote the record
	Fence      int64      // 1 for the first claim, +1 on every re-claim and takeover
	Attempts   int        // claims made on the key, this one included
	LeaseUntil time.Time
	ExpiresAt  time.Time // the record's expiry
	TakenOver  bool      // the previous claim's lease had passed
	Previous   *Record   // the record this claim replaced (RELEASED or expired STARTED), if any
}

// Begin claims key for a request with the given fingerprint (nil when requests are not
// compared). It returns exactly one of:
//   - a Claim: the caller now runs the operation and ends the claim with Complete, Fail or
//     Release;
//   - a final Record (COMPLETED or FAILED): replay it;
//   - an error: ErrKeyReuse, *InProgressError (ErrInProgress), ErrInvalidKey,
//     *OutcomeUnknownError, ctx.Err(), or a driver error.
//
// A claim whose previous owner released it or let its lease pass is taken by a conditional
// update that increments the fence and keeps counting attempts.
func (s *Store) Begin(ctx context.Context, key Key, fingerprint []byte) (*Claim, *Record, error) {
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return nil, nil, err
	}
	if len(fingerprint) > maxFingerprint {
		return nil, nil, &KeyError{Column: "fingerprint", Reason: fmt.Sprintf("%d bytes, limit %d (store a hash of the request)", len(fingerprint), maxFingerprint)}
	}
	if fingerprint == nil {
		fingerprint = []byte{} // an empty blob, not a null cell (a tombstone)
	}
	owner, err := gocql.RandomUUID()
	if err != nil {
		return nil, nil, err
	}
	var cur *Record // nil: no live record known
	// Each turn either ends or learns a newer record; contention can at most repeat it a few times.
	for range 8 {
		var c *Claim
		if cur == nil {
			c, cur, err = s.insert(ctx, key, fingerprint, owner)
		} else {
			if !bytes.Equal(cur.Fingerprint, fingerprint) {
				s.record(Event{Kind: EventKeyReuse, Key: key})
				return nil, nil, ErrKeyReuse
			}
			switch {
			case cur.Final():
				s.record(Event{Kind: EventReplay, Key: key})
				return nil, cur, nil
			case cur.Status == StatusStarted && time.Now().Before(cur.LeaseUntil):
				s.record(Event{Kind: EventConflict, Key: key})
				return nil, nil, &InProgressError{LeaseUntil: cur.LeaseUntil, Attempts: cur.Attempts}
			}
			c, cur, err = s.takeover(ctx, key, fingerprint, owner, cur)
		}
		if err != nil || c != nil {
			return c, nil, err
		}
	}
	s.record(Event{Kind: EventConflict, Key: key})
	return nil, nil, ErrInProgress
}

// insert tries the first claim. It returns the claim, or the live record that blocked it (nil
// when the record vanished, e.g. expired, between the attempt and the read).
func (s *Store) insert(ctx context.Context, key Key, fp []byte, owner gocql.UUID) (*Claim, *Record, error) {
	now := time.Now()
	c := &Claim{Key: key, Owner: owner, Fence: 1, Attempts: 1, LeaseUntil: now.Add(s.cfg.lease), ExpiresAt: now.Add(s.cfg.retention)}
	args := append(append([]any{}, key...), fp, owner, c.Fence, c.LeaseUntil, c.Attempts, now, now, c.ExpiresAt, ttlSeconds(c.ExpiresAt, now))
	applied, row, err := s.cas(ctx, "claim", key, s.session.Query(s.stmt.insert, args...))
	if IsOutcomeUnknown(err) {
		return s.resolveClaim(ctx, key, c, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if applied {
		s.record(Event{Kind: EventClaim, Key: key})
		return c, nil, nil
	}
	if len(row) == 0 {
		return nil, nil, nil
	}
	return nil, recordFromRow(row), nil
}

// takeover claims a RELEASED record, or a STARTED one whose lease has passed.
func (s *Store) takeover(ctx context.Context, key Key, fp []byte, owner gocql.UUID, prev *Record) (*Claim, *Record, error) {
	now := time.Now()
	c := &Claim{
		Key: key, Owner: owner, Fence: prev.Fence + 1, Attempts: prev.Attempts + 1,
		LeaseUntil: now.Add(s.cfg.lease), ExpiresAt: now.Add(s.cfg.retention),
		TakenOver: prev.Status == StatusStarted, Previous: prev,
	}
	created := prev.CreatedAt
	if created.IsZero() {
		created = now
	}
	args := []any{ttlSeconds(c.ExpiresAt, now), fp, owner, c.Fence, c.LeaseUntil, c.Attempts, created, now, c.ExpiresAt}
	args = append(append(args, key...), prev.Owner, prev.Fence, string(prev.Status))
	op := "reclaim"
	if c.TakenOver {
		op = "takeover"
	}
	applied, _, err := s.cas(ctx, op, key, s.session.Query(s.stmt.takeover, args...))
	if IsOutcomeUnknown(err) {
		return s.resolveClaim(ctx, key, c, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if !applied {
		// The condition columns alone cannot decide; read the whole record and decide again.
		rec, err := s.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, nil
		}
		return nil, rec, err
	}
	s.record(Event{Kind: EventClaim, Key: key})
	if c.TakenOver {
		s.record(Event{Kind: EventTakeover, Key: key})
	}
	return c, nil, nil
}

// resolveClaim settles a claim whose outcome is unknown by a serial read: our owner and fence
// in the record means the claim applied; anything else is a rejection (the record is returned
// to decide on); no record means it did not apply and the caller may try again.
func (s *Store) resolveClaim(ctx context.Context, key Key, c *Claim, cause error) (*Claim, *Record, error) {
	rec, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		s.record(Event{Kind: EventOutcomeResolved, Key: key})
		return nil, nil, nil
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, nil, ctxErr
		}
		return nil, nil, &OutcomeUnknownError{Op: "claim", Err: errors.Join(cause, err)}
	}
	s.record(Event{Kind: EventOutcomeResolved, Key: key})
	if rec.Owner == c.Owner && rec.Fence == c.Fence && rec.Status == StatusStarted {
		s.record(Event{Kind: EventClaim, Key: key})
		if c.TakenOver {
			s.record(Event{Kind: EventTakeover, Key: key})
		}
		return c, nil, nil
	}
	return nil, rec, nil
}

// Get reads the record of key at the store's serial consistency, so it sees the outcome of any
// conditional write in flight. It returns an error matching ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, key Key) (*Record, error) {
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return nil, err
	}
	start := time.Now()
	row, found, err := ReadSerial(ctx, s.session.Query(s.stmt.read, key...), s.cfg.serial)
	s.record(Event{Kind: EventLWT, Key: key, Op: "read", Applied: found, Latency: time.Since(start), Err: err})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	return recordFromRow(row), nil
}

// Renew extends the claim's lease by the configured lease. ErrLeaseLost means another worker
// took the claim over or the record expired: stop working on it.
func (s *Store) Renew(ctx context.Context, c *Claim) error {
	now := time.Now()
	until := now.Add(s.cfg.lease)
	ttl := ttlSeconds(c.ExpiresAt, now)
	if ttl <= 0 {
		s.record(Event{Kind: EventLeaseLost, Key: c.Key})
		return ErrLeaseLost
	}
	args := append(append([]any{ttl, until, now}, c.Key...), c.Owner, c.Fence)
	if err := s.transition(ctx, c, "renew", args, StatusStarted); err != nil {
		return err
	}
	c.LeaseUntil = until
	return nil
}

// Complete stores result as the key's answer (COMPLETED). ErrLeaseLost means the claim was taken
// over or the record expired and nothing was stored.
func (s *Store) Complete(ctx context.Context, c *Claim, result []byte) error {
	if len(result) > s.cfg.maxResult {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(result), s.cfg.maxResult)
	}
	if result == nil {
		result = []byte{} // an empty blob, not a null cell (a tombstone)
	}
	if err := s.finish(ctx, c, StatusCompleted, result); err != nil {
		return err
	}
	s.record(Event{Kind: EventComplete, Key: c.Key})
	return nil
}

// Fail stores message as a permanent failure (FAILED), replayed to later attempts. A message
// over the size limit is cut to it.
func (s *Store) Fail(ctx context.Context, c *Claim, message []byte) error {
	if err := s.finish(ctx, c, StatusFailed, s.clip(message)); err != nil {
		return err
	}
	s.record(Event{Kind: EventFail, Key: c.Key})
	return nil
}

// Release gives the claim up after a retryable failure (RELEASED, message kept as the last
// error): the next attempt claims the key again, with the attempt count carried on.
func (s *Store) Release(ctx context.Context, c *Claim, message []byte) error {
	if err := s.finish(ctx, c, StatusReleased, s.clip(message)); err != nil {
		return err
	}
	s.record(Event{Kind: EventRelease, Key: c.Key})
	return nil
}

func (s *Store) clip(b []byte) []byte {
	if len(b) > s.cfg.maxResult {
		return b[:s.cfg.maxResult]
	}
	return b
}

func (s *Store) finish(ctx context.Context, c *Claim, to Status, result []byte) error {
	now := time.Now()
	ttl := ttlSeconds(c.ExpiresAt, now)
	if ttl <= 0 {
		s.record(Event{Kind: EventLeaseLost, Key: c.Key})
		return ErrLeaseLost
	}
	args := append(append([]any{ttl, string(to), result, now, now}, c.Key...), c.Owner, c.Fence)
	return s.transition(ctx, c, strings.ToLower(string(to)), args, to)
}

// transition runs one owner-fenced update. Rejected: applied already if the record shows our
// owner and fence in the target status (an earlier attempt whose response was lost), else the
// lease is lost. Unknown: decided the same way from a serial read, retried once if the record
// is still ours and unchanged.
func (s *Store) transition(ctx context.Context, c *Claim, op string, args []any, to Status) error {
	stmt := s.stmt.finish
	if op == "renew" {
		stmt = s.stmt.renew
	}
	for try := 0; ; try++ {
		applied, row, err := s.cas(ctx, op, c.Key, s.session.Query(stmt, args...))
		if err == nil && applied {
			return nil
		}
		if err != nil && !IsOutcomeUnknown(err) {
			return err
		}
		if err != nil {
			rec, rerr := s.Get(ctx, c.Key)
			if rerr != nil && !errors.Is(rerr, ErrNotFound) {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return ctxErr
				}
				return &OutcomeUnknownError{Op: op, Err: errors.Join(err, rerr)}
			}
			s.record(Event{Kind: EventOutcomeResolved, Key: c.Key})
			row = nil
			if rec != nil {
				if rec.Owner == c.Owner && rec.Fence == c.Fence && rec.Status == StatusStarted {
					// Still ours and unchanged: the write did not apply (or, for a renewal,
					// cannot be told apart); sending it again is harmless.
					if try == 0 {
						continue
					}
					return &OutcomeUnknownError{Op: op, Err: err}
				}
				row = Row{"owner": rec.Owner, "fence": rec.Fence, "status": string(rec.Status)}
			}
		}
		r := recordFromRow(row)
		if r.Owner == c.Owner && r.Fence == c.Fence && r.Status == to {
			return nil
		}
		s.record(Event{Kind: EventLeaseLost, Key: c.Key})
		return ErrLeaseLost
	}
}

// cas runs one conditional statement at the store's consistencies and reports it.
func (s *Store) cas(ctx context.Context, op string, key Key, q *gocql.Query) (bool, Row, error) {
	start := time.Now()
	applied, row, err := ExecCAS(ctx, q.Consistency(s.cfg.commit), s.cfg.serial)
	var ou *OutcomeUnknownError
	if errors.As(err, &ou) {
		ou.Op = op
		s.record(Event{Kind: EventOutcomeUnknown, Key: key, Op: op, Err: err})
	}
	s.record(Event{Kind: EventLWT, Key: key, Op: op, Applied: applied, Latency: time.Since(start), Err: err})
	return applied, row, err
}

// ttlSeconds is the TTL that makes a cell written at now expire at expires. Every write of a
// record derives its TTL from the same expires, so all cells expire within the TTL's
// one-second resolution of each other.
func ttlSeconds(expires, now time.Time) int {
	return int(math.Ceil(expires.Sub(now).Seconds()))
}
