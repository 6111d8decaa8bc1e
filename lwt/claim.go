package lwt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"
)

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
	// CommitBy is zero for a claim. In a run of WithRepeatableFunction, which holds no claim, it
	// is the time after which the run's commit is no longer sent; Owner and Fence are then the
	// ones its commit will write, and the Fence fences nothing.
	CommitBy time.Time
}

// Created reports whether the claim created the key's record: no record of the key existed,
// so the table said the key was new.
func (c *Claim) Created() bool { return c.Previous == nil && c.Attempts == 1 }

// Begin claims key for a request with the given fingerprint (nil when requests are not
// compared). It returns exactly one of:
//   - a Claim: the caller now runs the operation and ends the claim with Complete, Fail or
//     Release;
//   - a final Record (COMPLETED or FAILED): replay it;
//   - an error: ErrKeyReuse, *InProgressError (ErrInProgress), ErrInvalidKey,
//     *cas.OutcomeUnknownError (the claim may hold the key until its lease passes), or a driver
//     error.
//
// A claim whose previous owner released it or let its lease pass is taken by a conditional
// update that increments the fence and keeps counting attempts.
func (s *Store) Begin(ctx context.Context, key Key, fingerprint []byte) (*Claim, *Record, error) {
	if err := s.checkCall(ctx); err != nil {
		return nil, nil, err
	}
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
		switch decide(cur, fingerprint, cur != nil && cur.LeaseLive(s.now())) {
		case decideInsert:
			c, cur, err = s.insert(ctx, key, fingerprint, owner)
		case decideKeyReuse:
			s.record(Observation{Kind: ObservedKeyReuse, Key: key})
			return nil, nil, ErrKeyReuse
		case decideReplay:
			s.record(Observation{Kind: ObservedReplay, Key: key})
			return nil, cur, nil
		case decideInProgress:
			s.record(Observation{Kind: ObservedConflict, Key: key})
			return nil, nil, &InProgressError{LeaseUntil: cur.LeaseUntil, Attempts: cur.Attempts}
		case decideTakeover:
			c, cur, err = s.takeover(ctx, key, fingerprint, owner, cur)
		}
		if err != nil || c != nil {
			return c, nil, err
		}
	}
	s.record(Observation{Kind: ObservedConflict, Key: key})
	return nil, nil, ErrInProgress
}

// claimPatience bounds how long an unknown claim is read back: long enough to ride out a
// node's restart, short enough that a claim which turns out ours keeps most of its lease.
func (s *Store) claimPatience() time.Duration { return min(s.cfg.commitTimeout, s.cfg.lease/2) }

// insert tries the first claim. It returns the claim, or the live record that blocked it (nil
// when there is none: the record expired meanwhile, or an unknown attempt did not apply).
func (s *Store) insert(ctx context.Context, key Key, fp []byte, owner gocql.UUID) (*Claim, *Record, error) {
	now := s.now()
	c := &Claim{Key: key, Owner: owner, Fence: 1, Attempts: 1, LeaseUntil: now.Add(s.cfg.lease), ExpiresAt: now.Add(s.cfg.retention)}
	args := append(append([]any{}, key...), fp, owner, c.Fence, c.Attempts, now, now, c.ExpiresAt, ttlSeconds(c.ExpiresAt, now))
	applied, row, err := s.resolveClaim(ctx, "claim", c, now, s.stmt.insert, args)
	if err != nil {
		return nil, nil, err
	}
	if applied {
		s.record(Observation{Kind: ObservedClaim, Key: key})
		return c, nil, nil
	}
	if len(row) == 0 {
		return nil, nil, nil
	}
	return nil, recordFromRow(row), nil
}

// takeover claims a RELEASED record, or a STARTED one whose lease cell the server has expired
// (the statement is conditioned on it, so a caller whose clock runs ahead cannot take a live
// claim).
func (s *Store) takeover(ctx context.Context, key Key, fp []byte, owner gocql.UUID, prev *Record) (*Claim, *Record, error) {
	now := s.now()
	c := &Claim{
		Key: key, Owner: owner, Fence: prev.Fence + 1, Attempts: prev.Attempts + 1,
		LeaseUntil: now.Add(s.cfg.lease), ExpiresAt: now.Add(s.cfg.retention),
		TakenOver: prev.Status == StatusStarted, Previous: prev,
	}
	created := prev.CreatedAt
	if created.IsZero() {
		created = now
	}
	args := []any{ttlSeconds(c.ExpiresAt, now), fp, owner, c.Fence, c.Attempts, created, now, c.ExpiresAt}
	args = append(append(args, key...), prev.Owner, prev.Fence)
	op, stmt := "reclaim", s.stmt.reclaim
	if c.TakenOver {
		op, stmt = "takeover", s.stmt.takeover
	}
	applied, _, err := s.resolveClaim(ctx, op, c, now, stmt, args)
	if err != nil {
		return nil, nil, err
	}
	if !applied {
		// A rejection returns only the condition's columns: read the whole record to decide again.
		rec, err := s.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, nil
		}
		return nil, rec, err
	}
	s.record(Observation{Kind: ObservedClaim, Key: key})
	if c.TakenOver {
		s.record(Observation{Kind: ObservedTakeover, Key: key})
	}
	return c, nil, nil
}
