package lwt

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// PutCompleted records key as COMPLETED with result, by a plain (non-LWT) write: the fast path
// of a warm Bloom pre-check, taken after the operation ran without a claim. The record has the
// same columns and the same single expiry as one the LWT path completes, with fence 0 (no claim
// was made), attempts 1 and the ownership epoch under which the pre-check said the key was new.
//
// A plain write beside LWTs on the same row can be lost or can interleave with them, because
// LWT cells carry Paxos ballot timestamps. PutCompleted is exact only when no LWT has touched
// the row and none will until it is written: the row does not exist (the caller owns the key's
// scope and its warm filter never saw the key) and every attempt of the key reaches this
// process (which keeps later attempts off the table until this write returns). When ownership
// may have moved, use PutCompletedIfNotExists instead.
//
// The write is idempotent (the same values again), so it may be retried. Errors: ErrInvalidKey,
// ErrResultTooLarge, ctx.Err(), or a driver error.
func (s *Store) PutCompleted(ctx context.Context, key Key, fingerprint, result []byte, epoch uint64) (*Record, error) {
	if err := s.checkCall(ctx); err != nil {
		return nil, err
	}
	rec, args, err := s.completed(key, fingerprint, result, epoch)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = s.session.Query(s.stmt.put, args...).WithContext(ctx).Consistency(s.cfg.commit).Idempotent(true).Exec()
	s.record(Observation{Kind: ObservedWrite, Key: key, Op: "put", Latency: time.Since(start), Err: err})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("lwt: put completed: %w", err)
	}
	return rec, nil
}

// PutCompletedIfNotExists writes the record PutCompleted writes, as INSERT ... IF NOT EXISTS: the
// fallback of a fast path whose ownership changed while the operation ran, so that a stale owner
// cannot overwrite a record someone else made. When it does not apply, existing is the record
// found (the operation then ran twice: count it). An unknown outcome is settled by Resolve: a
// serial read that finds no row means the put did not apply (applied false, existing nil).
// Errors as for Resolve.
func (s *Store) PutCompletedIfNotExists(ctx context.Context, key Key, fingerprint, result []byte, epoch uint64) (applied bool, existing *Record, err error) {
	if err := s.checkCall(ctx); err != nil {
		return false, nil, err
	}
	rec, args, err := s.completed(key, fingerprint, result, epoch)
	if err != nil {
		return false, nil, err
	}
	// The owner id is random per put, so a record showing it was written by this put.
	mine := func(row cas.Row, found bool) bool { return found && recordFromRow(row).Owner == rec.Owner }
	applied, row, err := s.resolve(ctx, "put", key, s.session.Query(s.stmt.putIfNotExists, args...), mine, s.cfg.commitTimeout)
	if err != nil || applied || row == nil {
		// No row after an unknown INSERT means it did not apply; the caller may put again.
		return applied, nil, err
	}
	return false, recordFromRow(row), nil
}

// completed validates a fast-path record and returns it with the bind values of stmt.put.
func (s *Store) completed(key Key, fingerprint, result []byte, epoch uint64) (*Record, []any, error) {
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return nil, nil, err
	}
	if len(fingerprint) > maxFingerprint {
		return nil, nil, &KeyError{Column: "fingerprint", Reason: fmt.Sprintf("%d bytes, limit %d", len(fingerprint), maxFingerprint)}
	}
	if len(result) > s.cfg.maxResult {
		return nil, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(result), s.cfg.maxResult)
	}
	if epoch > math.MaxInt64 {
		return nil, nil, fmt.Errorf("lwt: epoch %d does not fit a bigint", epoch)
	}
	if fingerprint == nil {
		fingerprint = []byte{} // an empty blob, not a null cell (a tombstone)
	}
	if result == nil {
		result = []byte{}
	}
	owner, err := gocql.RandomUUID()
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	rec := &Record{Status: StatusCompleted, Fingerprint: fingerprint, Owner: owner, LeaseUntil: now, Attempts: 1,
		Result: result, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(s.cfg.retention), Epoch: int64(epoch)}
	args := append(append([]any{}, key...), fingerprint, owner, now, result, now, now, rec.ExpiresAt, int64(epoch),
		ttlSeconds(rec.ExpiresAt, now))
	return rec, args, nil
}
