package lwt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// adminStatements are the operator's statements: an inspection read, the two repairs and the
// scan.
type adminStatements struct {
	inspect, release, delete, scan string
}

func buildAdminStatements(table string, keyCols []string, read string) adminStatements {
	where := strings.Join(keyCols, " = ? AND ") + " = ?"
	cols := strings.Join(keyCols, ", ")
	return adminStatements{
		inspect: strings.Replace(read, " FROM ", ", TTL(status) AS status_ttl FROM ", 1),
		// Fenced on the record that was read: a claim made, renewed to another status or
		// taken over meanwhile makes the condition fail, and the decision is made again.
		// A released record holds no lease: the lease cells go with the claim they belonged to.
		release: "UPDATE " + table + " USING TTL ? SET status = 'RELEASED', result = ?, updated_at = ?, lease_owner = null, lease_until = null WHERE " +
			where + " IF owner = ? AND fence = ? AND status = ?",
		delete: "DELETE FROM " + table + " WHERE " + where + " IF owner = ? AND fence = ? AND status = ?",
		// A scan needs neither the fingerprint nor the result: large blobs it would only drop.
		scan: "SELECT " + cols + ", status, owner, fence, lease_until, attempts, created_at, updated_at, expires_at, epoch, lease_owner FROM " +
			table + " WHERE token(" + cols + ") > ? AND token(" + cols + ") <= ?",
	}
}

// Inspection is a record as an operator sees it.
type Inspection struct {
	Key Key
	Record
	// TTL is what the node says is left of the record's life (the TTL of its status cell);
	// it should agree with ExpiresAt to the second.
	TTL time.Duration
	// LiveLease reports a STARTED record whose lease is live (Record.LeaseLive: the server's
	// lease cell is there): a worker may be running the operation now.
	LiveLease bool
}

// Inspect reads key's record, and the node's remaining TTL of it, at the store's serial
// consistency, so it sees the outcome of any conditional write in flight. It returns an error
// matching ErrNotFound when there is none.
func (s *Store) Inspect(ctx context.Context, key Key) (*Inspection, error) {
	if err := s.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return nil, err
	}
	start := time.Now()
	row, found, err := cas.ReadSerial(ctx, s.session.Query(s.adm.inspect, key...), s.cfg.serial)
	s.record(Observation{Kind: ObservedLWT, Key: key, Op: "read", Applied: found, Latency: time.Since(start), Err: err})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	return s.inspection(key, row), nil
}

func (s *Store) inspection(key Key, row cas.Row) *Inspection {
	in := &Inspection{Key: key, Record: *recordFromRow(row), TTL: time.Duration(get[int](row, "status_ttl")) * time.Second}
	in.LiveLease = in.Status == StatusStarted && in.LeaseLive(s.now())
	return in
}

// AdminOption configures ReleaseKey and Delete. A nil one is ErrInvalidArgument.
type AdminOption func(*adminConfig) error

type adminConfig struct {
	force bool
	note  string
	seen  *Inspection // IfUnchanged: act only on this record
}

// ErrRecordChanged is returned by ReleaseKey and Delete given IfUnchanged when the record is no
// longer the one inspected: an attempt claimed, completed or released it since. Nothing was
// written; inspect it again and decide on what it is now.
var ErrRecordChanged = errors.New("lwt: record changed since it was inspected")

// IfUnchanged makes ReleaseKey and Delete act only while the record is the one seen (the same
// owner, fence and status, as Inspect returned it), so a decision made on what an operator
// was shown, such as to release a record that was not yet COMPLETED, is never applied to a
// record that changed meanwhile. Otherwise they return ErrRecordChanged and write nothing.
// A nil Inspection is ErrInvalidArgument.
func IfUnchanged(seen *Inspection) AdminOption {
	return func(c *adminConfig) error {
		if seen == nil {
			return fmt.Errorf("%w: IfUnchanged: nil Inspection", ErrInvalidArgument)
		}
		c.seen = seen
		return nil
	}
}

// Force lets ReleaseKey and Delete act on a claim whose lease is live. The worker holding it
// is not stopped: its later writes fail with ErrLeaseLost, but the operation it is running may
// still take effect, and may then run again under the next claim.
func Force() AdminOption { return func(c *adminConfig) error { c.force = true; return nil } }

// WithNote sets the text ReleaseKey stores as the released record's last error (default
// "released by an operator"), so whoever reads the record later knows why.
func WithNote(note string) AdminOption {
	return func(c *adminConfig) error { c.note = note; return nil }
}

func adminOptions(cfg adminConfig, opts []AdminOption) (adminConfig, error) {
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%w: nil AdminOption", ErrInvalidArgument)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// AdminResult says what ReleaseKey or Delete did.
type AdminResult struct {
	// Before is the record as it was when the write was decided; nil when there was none.
	Before *Inspection
	// Changed is false when nothing was written: the record was already RELEASED (ReleaseKey).
	Changed bool
}

// adminRounds bounds how often ReleaseKey and Delete decide again after the record changed
// under them; a key that keeps changing is being worked on, which answers the question too.
const adminRounds = 4

// ReleaseKey releases key's record as a retryable failure would (RELEASED, attempts and fence
// kept): the next call with the key claims it and runs the operation again. It acts on any
// status: on a STARTED claim whose lease expired (a worker that died), on a FAILED record (a
// permanent failure to retry after a fix) and on a COMPLETED one (whose stored result is
// discarded). A RELEASED record is left as it is (Changed false).
//
// The write is a lightweight transaction conditioned on the owner, fence and status that were
// read, so a claim made meanwhile is never overwritten; if the record changed, the decision is
// made again on the new one. A claim whose lease is live gets an *InProgressError unless Force
// is given. ErrNotFound when the key has no record. This store's cache (WithCache) forgets the
// key; other processes that cache completed records keep replaying a COMPLETED one from memory
// until it expires there or falls out.
func (s *Store) ReleaseKey(ctx context.Context, key Key, opts ...AdminOption) (AdminResult, error) {
	if err := s.checkCall(ctx); err != nil {
		return AdminResult{}, err
	}
	cfg, err := adminOptions(adminConfig{note: "released by an operator"}, opts)
	if err != nil {
		return AdminResult{}, err
	}
	return s.administer(ctx, key, cfg, "admin-release", func(in *Inspection) (bool, *gocql.Query, func(cas.Row, bool) bool) {
		if in.Status == StatusReleased {
			return false, nil, nil
		}
		now := s.now().Truncate(time.Millisecond)
		args := append([]any{s.keepTTL(in, now), s.clip([]byte(cfg.note)), now}, key...)
		args = append(args, fenceArgs(in)...)
		released := func(row cas.Row, found bool) bool {
			r := recordFromRow(row)
			return found && r.Status == StatusReleased && r.Owner == in.Owner && r.Fence == in.Fence && r.UpdatedAt.Equal(now)
		}
		return true, s.session.Query(s.adm.release, args...), released
	})
}

// Delete removes key's record, whatever its status, so the next call with the key runs the
// operation as a new one (fence 1). The rules of ReleaseKey apply: a conditional delete fenced
// on the record read, refused on a live lease unless Force is given, ErrNotFound when the key
// has no record.
func (s *Store) Delete(ctx context.Context, key Key, opts ...AdminOption) (AdminResult, error) {
	if err := s.checkCall(ctx); err != nil {
		return AdminResult{}, err
	}
	cfg, err := adminOptions(adminConfig{}, opts)
	if err != nil {
		return AdminResult{}, err
	}
	return s.administer(ctx, key, cfg, "admin-delete", func(in *Inspection) (bool, *gocql.Query, func(cas.Row, bool) bool) {
		args := append(append([]any{}, key...), fenceArgs(in)...)
		// Only a new claim can create the row again, and it has a new random owner.
		gone := func(row cas.Row, found bool) bool {
			r := recordFromRow(row)
			return !found || r.Owner != in.Owner || r.Fence != in.Fence
		}
		return true, s.session.Query(s.adm.delete, args...), gone
	})
}

// administer reads key, lets decide choose a fenced write, and runs it through Resolve until
// it applies or is not needed.
func (s *Store) administer(ctx context.Context, key Key, cfg adminConfig, op string,
	decide func(*Inspection) (bool, *gocql.Query, func(cas.Row, bool) bool)) (AdminResult, error) {
	for range adminRounds {
		in, err := s.Inspect(ctx, key)
		if err != nil {
			return AdminResult{}, err
		}
		res := AdminResult{Before: in}
		if s := cfg.seen; s != nil && (s.Owner != in.Owner || s.Fence != in.Fence || s.Status != in.Status) {
			return res, fmt.Errorf("%w: %v is %s with fence %d now, was %s with fence %d", ErrRecordChanged, key, in.Status, in.Fence, s.Status, s.Fence)
		}
		if in.LiveLease && !cfg.force {
			return res, &InProgressError{LeaseUntil: in.LeaseUntil, Attempts: in.Attempts}
		}
		write, q, done := decide(in)
		if !write {
			return res, nil
		}
		applied, _, err := cas.Resolve(ctx, cas.Conditional{
			Op: op, Write: q, Read: s.session.Query(s.stmt.read, key...), Applied: done,
			Patience: transitionPatience, Observe: s.observeCAS(key),
		}, s.cfg.commit, s.cfg.serial)
		if err != nil {
			return res, err
		}
		if applied {
			if s.cache != nil {
				s.cache.drop(key)
			}
			res.Changed = true
			return res, nil
		}
	}
	return AdminResult{}, fmt.Errorf("lwt: %s %v: the record changed %d times while deciding: %w", op, key, adminRounds, ErrInProgress)
}

// fenceArgs binds the condition owner = ? AND fence = ? AND status = ? to the record read. A
// null owner (a row written by hand) is bound as null, which the condition compares as such.
func fenceArgs(in *Inspection) []any {
	var owner any = in.Owner
	if in.Owner == (gocql.UUID{}) {
		owner = nil
	}
	return []any{owner, in.Fence, string(in.Status)}
}

// keepTTL is the TTL that keeps a rewritten record's cells on the record's expiry: from
// expires_at, or from the node's TTL when the row has no expires_at.
func (s *Store) keepTTL(in *Inspection, now time.Time) int {
	if !in.ExpiresAt.IsZero() {
		return max(1, ttlSeconds(in.ExpiresAt, now))
	}
	return max(1, int(in.TTL/time.Second))
}
