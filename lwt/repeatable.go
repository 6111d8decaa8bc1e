package lwt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// WithRepeatableFunction declares that the function may run more than once for the key: it has
// no effect outside its result and the completion cells it sets (package outbox's staged
// events), so running it again changes nothing that anyone can see. The call then costs one
// Paxos round instead of two: the function runs first, with no claim, and one conditional
// insert (INSERT ... IF NOT EXISTS) writes the COMPLETED record with its result, fingerprint
// and completion cells. Its commit never happens twice; the function may run many times.
//
// Do not use it for a function with any other effect: a card charge, an email, a write to
// another table or service. Two callers of a new key both run it (one in each process, or
// several in one) before one of them commits; a caller that crashes after it ran and before it
// committed leaves nothing behind, and the retry runs it again.
//
// What a call finds on its insert, and does:
//   - no record: its result is committed (Result.Created), the one Paxos round;
//   - COMPLETED or FAILED with its fingerprint (a racing caller committed first): that stored
//     answer, flagged as a replay, as any duplicate gets it; its own result is dropped;
//   - another request's record: ErrKeyReuse;
//   - STARTED with a live lease (a caller without this option holds the key): ErrInProgress,
//     or with WithWait the stored answer once there is one;
//   - RELEASED, or STARTED past its lease: the record is claimed as ExecuteOnce claims it, and
//     the function runs again under that claim (two more rounds), as the state machine asks.
//
// A permanent error (Permanent) is committed the same way, as FAILED; any other error of the
// function writes nothing. The run has one lease (WithLease) to commit: its ctx ends then, and a
// result it returns later is not committed (ErrLeaseLost; a retry runs it again). A commit whose
// outcome is unknown is settled by a serial read for the record's owner id, which this attempt
// alone writes; a read that finds no record sends the insert again until the lease ends.
//
// A retry runs the function again before its insert finds the stored result, so it takes as
// long as the function: a caller whose timeout is shorter than the function never sees the
// answer of a retry from the node. Give the store a cache (WithCache): a replay, or the commit,
// puts the result there, and the next retry in the process is answered without running.
//
// In one process, with a cache, a call of a key whose run is in flight waits for that run (as
// long as its ctx allows) and is answered from the cache with what it committed, so a client's
// double submit or retry costs neither a second run nor a second Paxos round; if that run
// committed nothing, the call runs as if it came first. Without a cache, calls of a running key
// race it as calls from other processes do. Under an owned scope (Store.Own) the fast path
// needs the key to itself, so there a second call gets ErrInProgress (or waits) as without this
// option. The option is per call because it is a property of the function; httpidem's
// WithRepeatableHandler passes it for a route.
func WithRepeatableFunction() CallOption {
	return func(c *callConfig) error { c.repeatable = true; return nil }
}

// errOutlived: a repeatable run's result came after its lease ended, so it was not committed.
var errOutlived = fmt.Errorf("%w: the repeatable run outlived its lease; nothing was committed", ErrLeaseLost)

// repeatableFence returns the fence of a repeatable run's record: random, at least 2^32 and below
// 2^62, so that two racing runs' owner-and-fence pairs differ in their fence too (package
// outbox keys a run's intent by it), never equal a counted claim's fence (1, 2, ...) and leave
// room for the claims an operator's release may add.
func repeatableFence() int64 { return 1<<32 + rand.Int64N(1<<62-1<<32) }

// runRepeatable runs c.fn without a claim and commits its outcome with one conditional insert.
// claim is true when the key holds a record to claim (RELEASED, or STARTED past its lease): the
// caller then runs the claimed path, and res and err mean nothing.
func (s *Store) runRepeatable(ctx context.Context, c *call) (res Result, claim bool, err error) {
	if len(c.fingerprint) > maxFingerprint {
		return Result{}, false, &KeyError{Column: "fingerprint", Reason: fmt.Sprintf("%d bytes, limit %d (store a hash of the request)", len(c.fingerprint), maxFingerprint)}
	}
	owner, err := gocql.RandomUUID()
	if err != nil {
		return Result{}, false, err
	}
	start := s.now()
	// The deadline on the monotonic clock: package outbox's relay waits a bounded time for the
	// record of a run that staged events, so no commit may be sent later than this.
	deadline := time.Now().Add(s.cfg.lease)
	run := Claim{Key: c.key, Owner: owner, Fence: repeatableFence(), Attempts: 1, LeaseUntil: start.Add(s.cfg.lease),
		ExpiresAt: start.Add(s.cfg.retention), CommitBy: start.Add(s.cfg.lease)}
	comp := s.newCompletion()
	fnCtx, cancel := context.WithDeadlineCause(context.WithValue(context.WithValue(ctx, claimCtxKey{}, &claimHolder{claim: run}),
		completionCtxKey{}, comp), deadline, errOutlived)
	value, panicked, fnErr := runGuarded(fnCtx, c.fn)
	outlived := errors.Is(context.Cause(fnCtx), errOutlived)
	cancel()
	switch {
	case panicked != nil:
		panic(panicked.value) // nothing was written: there is nothing to release
	case outlived:
		s.record(Observation{Kind: ObservedLeaseLost, Key: c.key})
		return Result{}, false, errOutlived
	}
	status, cells := StatusCompleted, completionCells{}
	switch {
	case fnErr != nil && IsPermanent(fnErr):
		status, value = StatusFailed, s.clip([]byte(fnErr.Error()))
	case fnErr != nil:
		return Result{}, false, fnErr
	case len(value) > s.cfg.maxResult:
		return Result{}, false, fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(value), s.cfg.maxResult)
	default:
		cols, values, cellErr := comp.seal()
		if cellErr != nil {
			return Result{}, false, cellErr
		}
		cells = completionCells{cols: cols, values: values}
	}
	rec, err := s.commitNew(ctx, c, &run, status, value, cells, deadline)
	switch {
	case err != nil:
		return Result{}, false, err
	case rec == nil: // committed
		return s.committed(c, &run, status, value, fnErr)
	}
	return s.settleRepeatable(ctx, c, rec)
}

// committed is the answer of a repeatable run whose insert applied.
func (s *Store) committed(c *call, run *Claim, status Status, value []byte, fnErr error) (Result, bool, error) {
	base := Result{Created: true, Attempts: 1, Fence: run.Fence}
	if status == StatusFailed {
		s.record(Observation{Kind: ObservedFail, Key: c.key})
		return base, false, &FailureError{Message: fnErr.Error(), Err: fnErr}
	}
	s.record(Observation{Kind: ObservedComplete, Key: c.key})
	if s.cache != nil {
		s.cache.put(c.key, &Record{Status: StatusCompleted, Fingerprint: c.fingerprint, Owner: run.Owner, Fence: run.Fence,
			Attempts: 1, Result: value, ExpiresAt: run.ExpiresAt})
	}
	base.Value = value
	return base, false, nil
}

// settleRepeatable answers a repeatable run whose insert found rec, by the state machine.
func (s *Store) settleRepeatable(ctx context.Context, c *call, rec *Record) (Result, bool, error) {
	fp := c.fingerprint
	if fp == nil {
		fp = []byte{}
	}
	switch decide(rec, fp, rec.LeaseLive(s.now())) {
	case decideReplay:
		s.record(Observation{Kind: ObservedReplay, Key: c.key})
		res, err := s.replay(c.key, rec)
		return res, false, err
	case decideKeyReuse:
		s.record(Observation{Kind: ObservedKeyReuse, Key: c.key})
		return Result{}, false, ErrKeyReuse
	case decideInProgress:
		if !c.wait {
			s.record(Observation{Kind: ObservedConflict, Key: c.key})
			return Result{}, false, &InProgressError{LeaseUntil: rec.LeaseUntil, Attempts: rec.Attempts}
		}
		final, err := s.wait(ctx, c.key, c.fingerprint)
		if err != nil || final == nil {
			return Result{}, err == nil, err
		}
		res, err := s.replay(c.key, final)
		return res, false, err
	}
	return Result{}, true, nil
}

// commitNew sends a repeatable run's insert until it is known to have applied (nil, nil) or to
// have found a record (returned), or the run's deadline passes. An insert whose outcome was
// unknown and whose serial read found no record did not apply, so it is sent again; one read
// that fails leaves the outcome unknown (*OutcomeUnknownError).
func (s *Store) commitNew(ctx context.Context, c *call, run *Claim, status Status, value []byte, cells completionCells, deadline time.Time) (*Record, error) {
	if value == nil {
		value = []byte{} // an empty blob, not a null cell (a tombstone)
	}
	fp := c.fingerprint
	if fp == nil {
		fp = []byte{}
	}
	// The result is committed even if the caller's ctx ended meanwhile: the work is done.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.commitTimeout)
	defer cancel()
	stmt := s.commitNewWith(cells)
	mine := func(row cas.Row, found bool) bool { return found && recordFromRow(row).Owner == run.Owner }
	for {
		if !time.Now().Before(deadline) {
			s.record(Observation{Kind: ObservedLeaseLost, Key: c.key})
			return nil, errOutlived
		}
		now := s.now()
		args := append(append([]any{}, c.key...), fp, string(status), run.Owner, run.Fence, value, now, now, run.ExpiresAt)
		args = append(append(args, cells.values...), ttlSeconds(run.ExpiresAt, now))
		applied, row, err := s.resolve(cctx, "commit", c.key, s.session.Query(stmt, args...), mine, s.claimPatience())
		switch {
		case err != nil:
			return nil, err
		case applied || mine(row, row != nil):
			// Applied now, or by an earlier send whose coordinator finished it after our read.
			return nil, nil
		case row != nil:
			return recordFromRow(row), nil
		}
		if err := loop.Sleep(cctx, 20*time.Millisecond); err != nil {
			return nil, fmt.Errorf("lwt: commit not applied: %w", err)
		}
	}
}

// commitNewWith is the repeatable run's insert with the completion cells set beside the result.
func (s *Store) commitNewWith(cells completionCells) string {
	if len(cells.cols) == 0 {
		return s.stmt.commitNew
	}
	cols, marks := "", ""
	for _, c := range cells.cols {
		cols += ", " + s.completionQuoted[c]
		marks += ", ?"
	}
	st := strings.Replace(s.stmt.commitNew, ", expires_at)", ", expires_at"+cols+")", 1)
	return strings.Replace(st, "?) IF NOT EXISTS", "?"+marks+") IF NOT EXISTS", 1)
}
