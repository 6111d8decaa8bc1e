package lwt

import (
	"context"
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/internal/loop"
)

// run calls fn under claim, renewing the lease until the claim has ended, and ends the claim
// by fn's outcome.
func (s *Store) run(ctx context.Context, c *call, claim *Claim) (Result, error) {
	holder := &claimHolder{claim: *claim}
	comp := s.newCompletion()
	fnCtx, cancel := context.WithCancelCause(context.WithValue(context.WithValue(ctx, claimCtxKey{}, holder), completionCtxKey{}, comp))
	defer cancel(nil)
	// The renewal outlives the caller's ctx: the claim must stay ours while its end is written.
	stop := s.renewLease(context.WithoutCancel(ctx), cancel, claim, holder)
	defer stop()

	value, panicked, fnErr := runGuarded(fnCtx, c.fn)
	// The claim's end is written even if the caller's ctx has ended: the work is done. The
	// commit budget starts now, when fn has returned, however long fn took.
	endCtx, endCancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.commitTimeout)
	defer endCancel()
	if panicked != nil {
		stop() // the release is then the claim's last write
		_ = s.Release(endCtx, claim, []byte("panic"))
		panic(panicked.value)
	}
	if checkLeaseLost && errors.Is(context.Cause(fnCtx), ErrLeaseLost) {
		s.record(Observation{Kind: ObservedLeaseLost, Key: claim.Key})
		return Result{}, ErrLeaseLost
	}
	base := Result{Attempts: claim.Attempts, Fence: claim.Fence, Created: claim.Created()}
	switch {
	case fnErr != nil:
		return s.endUnstored(endCtx, claim, base, fnErr)
	case len(value) > s.cfg.maxResult:
		return s.endUnstored(endCtx, claim, base, fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(value), s.cfg.maxResult))
	}
	cols, values, cellErr := comp.seal()
	if cellErr != nil {
		// As an error of fn: a cell refused for good (the outbox's refused events) fails the
		// run, since a retry would be refused the same way after running fn again; any other
		// stored nothing, so a retry runs fn again.
		return s.endUnstored(endCtx, claim, base, cellErr)
	}
	if err := s.complete(endCtx, claim, value, completionCells{cols: cols, values: values}); err != nil {
		return base, err
	}
	if s.cache != nil {
		s.cache.put(c.key, &Record{Status: StatusCompleted, Fingerprint: c.fingerprint, Owner: claim.Owner, Fence: claim.Fence,
			Attempts: claim.Attempts, Result: value, ExpiresAt: claim.ExpiresAt})
	}
	base.Value = value
	return base, nil
}

// recovered is a panic of fn, to be re-raised once the claim is released.
type recovered struct{ value any }

// runGuarded runs fn, turning a panic into a value so the claim can be released before it is
// re-raised.
func runGuarded(ctx context.Context, fn func(context.Context) ([]byte, error)) (value []byte, panicked *recovered, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = &recovered{value: p}
		}
	}()
	value, err = fn(ctx)
	return value, nil, err
}

// renewLease starts the goroutine that keeps the claim's lease alive until stop is called. It
// works on its own copy of the claim and publishes each renewed lease to holder, so fn can read
// the claim meanwhile. It cancels fn's ctx with ErrLeaseLost when the lease is lost or runs out
// unrenewed. stop ends the goroutine and waits for it.
func (s *Store) renewLease(ctx context.Context, cancel context.CancelCauseFunc, claim *Claim, holder *claimHolder) (stop func()) {
	mine := *claim
	return loop.Every(s.cfg.lease/3, func() bool {
		rctx, rcancel := context.WithTimeout(ctx, mine.LeaseUntil.Sub(s.now()))
		err := s.Renew(rctx, &mine)
		rcancel()
		switch {
		case err == nil:
			holder.renewed(mine.LeaseUntil)
			return true
		case errors.Is(err, errClaimEnded):
			return false // the claim's end was written: nothing left to keep
		case errors.Is(err, ErrLeaseLost) || !s.now().Before(mine.LeaseUntil):
			cancel(ErrLeaseLost)
			return false
		}
		return true
	})
}

// endUnstored ends claim without a result because of cause: failed for good if cause is
// permanent (the caller gets a FailureError), released otherwise (a retry runs fn again).
func (s *Store) endUnstored(ctx context.Context, claim *Claim, base Result, cause error) (Result, error) {
	if IsPermanent(cause) {
		if err := s.Fail(ctx, claim, []byte(cause.Error())); err != nil {
			return base, errors.Join(cause, err)
		}
		return base, &FailureError{Message: cause.Error(), Err: cause}
	}
	if err := s.Release(ctx, claim, []byte(cause.Error())); err != nil {
		return base, errors.Join(cause, err)
	}
	return base, cause
}
