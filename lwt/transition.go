package lwt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// errClaimEnded: the record shows this claim already ended (COMPLETED, FAILED or RELEASED by
// it). A renewal that races the claim's own end gets it; it matches ErrLeaseLost for callers of
// Renew, but is not a lease lost to another worker.
var errClaimEnded = fmt.Errorf("%w: the claim has ended", ErrLeaseLost)

// transitionPatience bounds the serial reads of one send of a transition; the send is then
// repeated while the caller's ctx (the commit budget) lasts.
const transitionPatience = 2 * time.Second

// Renew extends the claim's lease by the configured lease: it rewrites the lease cells with the
// lease's TTL, so the lease lasts until Cassandra's clock passes it. ErrLeaseLost means another
// worker took the claim over or the record expired: stop working on it.
func (s *Store) Renew(ctx context.Context, c *Claim) error {
	if err := s.checkCall(ctx); err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("%w: nil claim", ErrInvalidArgument)
	}
	// Milliseconds, as Cassandra stores timestamps, so a read-back can recognise this renewal.
	until := s.now().Add(s.cfg.lease).Truncate(time.Millisecond)
	renewed := func(row cas.Row, found bool) bool {
		return holds(c, StatusStarted)(row, found) && recordFromRow(row).LeaseUntil.Equal(until)
	}
	err := s.transition(ctx, c, "renew", s.stmt.renew, renewed, func(now time.Time, _ int) []any {
		return append(append([]any{s.leaseTTL(c, now), c.Owner, until}, c.Key...), c.Owner, c.Fence)
	})
	if err != nil {
		return err
	}
	c.LeaseUntil = until
	return nil
}

// Complete stores result as the key's answer (COMPLETED). ErrLeaseLost means the claim was taken
// over or the record expired and nothing was stored. A send whose outcome is unknown is read
// back and sent again while ctx lasts; *cas.OutcomeUnknownError means ctx ended first.
func (s *Store) Complete(ctx context.Context, c *Claim, result []byte) error {
	if err := s.checkCall(ctx); err != nil {
		return err
	}
	if len(result) > s.cfg.maxResult {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(result), s.cfg.maxResult)
	}
	return s.complete(ctx, c, result, completionCells{})
}

// complete is Complete with a run's completion cells written in the same conditional update.
func (s *Store) complete(ctx context.Context, c *Claim, result []byte, cells completionCells) error {
	if result == nil {
		result = []byte{} // an empty blob, not a null cell (a tombstone)
	}
	return s.finish(ctx, c, StatusCompleted, result, cells)
}

// Fail stores message as a permanent failure (FAILED), replayed to later attempts. A message
// over the size limit is cut to it.
func (s *Store) Fail(ctx context.Context, c *Claim, message []byte) error {
	return s.end(ctx, c, StatusFailed, message)
}

// Release gives the claim up after a retryable failure (RELEASED, message kept as the last
// error): the next attempt claims the key again, with the attempt count carried on.
func (s *Store) Release(ctx context.Context, c *Claim, message []byte) error {
	return s.end(ctx, c, StatusReleased, message)
}

// end is Fail and Release: the claim ends with message, cut to the size limit, as its result.
func (s *Store) end(ctx context.Context, c *Claim, to Status, message []byte) error {
	if err := s.checkCall(ctx); err != nil {
		return err
	}
	return s.finish(ctx, c, to, s.clip(message), completionCells{})
}

func (s *Store) clip(b []byte) []byte {
	if len(b) > s.cfg.maxResult {
		return b[:s.cfg.maxResult]
	}
	return b
}

// finishOps names each ending transition in errors and observations.
var finishOps = map[Status]string{StatusCompleted: "complete", StatusFailed: "fail", StatusReleased: "release"}

// finish ends c's record with status to and result, and extra cells set beside the result (only
// a completion has any), then records the ending (observedEnd).
func (s *Store) finish(ctx context.Context, c *Claim, to Status, result []byte, cells completionCells) error {
	if c == nil {
		return fmt.Errorf("%w: nil claim", ErrInvalidArgument)
	}
	err := s.transition(ctx, c, finishOps[to], s.finishWith(cells), holds(c, to), func(now time.Time, ttl int) []any {
		args := append([]any{ttl, string(to), result, now}, cells.values...)
		return append(append(args, c.Key...), finishFence(c)...)
	})
	if err != nil {
		return err
	}
	s.record(Observation{Kind: observedEnd[to], Key: c.Key})
	return nil
}

// transition sends one owner-fenced update of c's record until it is known to have applied
// (done reports that from the record), known to be fenced off (ErrLeaseLost: the record shows
// another claim, another status, or is gone), or ctx ends. A send whose outcome is unknown is
// settled by serial reads; one that did not apply while the record is still ours and STARTED
// (the read found the write lost), or that failed before reaching a replica, is sent again with
// backoff. The condition makes a repeated send harmless: once one applied, the next is rejected
// and the record shows it.
func (s *Store) transition(ctx context.Context, c *Claim, op, stmt string, done func(cas.Row, bool) bool, args func(now time.Time, ttl int) []any) error {
	delay := 20 * time.Millisecond
	var last error
	unknown := false
	for {
		now := s.now()
		ttl := ttlSeconds(c.ExpiresAt, now)
		if ttl <= 0 {
			s.record(Observation{Kind: ObservedLeaseLost, Key: c.Key})
			return ErrLeaseLost
		}
		applied, row, err := s.resolve(ctx, op, c.Key, s.session.Query(stmt, args(now, ttl)...), done, transitionPatience)
		switch {
		case err == nil && (applied || done(row, row != nil)):
			return nil // applied now, or by an earlier send whose response was lost
		case err == nil:
			r := recordFromRow(row)
			ours := row != nil && r.Owner == c.Owner && r.Fence == c.Fence
			if ours && r.Status != StatusStarted {
				return errClaimEnded // e.g. a renewal racing the completion that just applied
			}
			if !ours {
				s.record(Observation{Kind: ObservedLeaseLost, Key: c.Key})
				return ErrLeaseLost
			}
			last = fmt.Errorf("lwt: %s did not apply", op)
		case !resendable(err):
			return err
		default:
			unknown = unknown || errors.Is(err, ErrOutcomeUnknown)
			last = err
		}
		if werr := loop.Sleep(ctx, delay); werr != nil {
			if unknown {
				return &cas.OutcomeUnknownError{Op: op, Err: errors.Join(last, werr)}
			}
			return fmt.Errorf("lwt: %s: %w", op, errors.Join(last, werr))
		}
		delay = min(delay*2, time.Second)
	}
}

// resendable reports whether a failed conditional write may be sent again: anything but a
// statement the node refuses as such (syntax, invalid, unauthorized, configuration) or a result
// that cannot be decoded.
func resendable(err error) bool {
	if errors.Is(err, cas.ErrMalformedResult) {
		return false
	}
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeSyntax, gocql.ErrCodeInvalid, gocql.ErrCodeUnauthorized, gocql.ErrCodeConfig:
			return false
		}
	}
	return true
}
