package lwt

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
)

// Result is the answer of ExecuteOnce.
type Result struct {
	Value     []byte
	Replay    bool // the value was stored by an earlier call; the function did not run now
	FromCache bool // the replay was served by the in-process cache
	Attempts  int  // claims made on the key (known when this call ran or read the record)
	Fence     int64
}

// CallOption configures one ExecuteOnce call.
type CallOption func(*callConfig)

type callConfig struct {
	fingerprint []byte
	wait        bool
}

// WithRequest sets the request the key stands for. Its SHA-256 is stored with the record; a
// later call with the same key and another request gets ErrKeyReuse and nothing runs. Without
// it every request with the key matches.
func WithRequest(request []byte) CallOption {
	return func(c *callConfig) {
		sum := sha256.Sum256(request)
		c.fingerprint = sum[:]
	}
}

// WithWait makes a duplicate that meets a live claim wait, within its ctx, for the stored
// result instead of returning ErrInProgress; if the other claim is released or its lease
// passes, this call claims the key and runs the function itself.
func WithWait() CallOption {
	return func(c *callConfig) { c.wait = true }
}

type claimCtxKey struct{}

// ClaimFromContext returns the claim under which the function passed to ExecuteOnce runs, so
// it can hand the fencing token to systems that reject stale writers.
func ClaimFromContext(ctx context.Context) (*Claim, bool) {
	c, ok := ctx.Value(claimCtxKey{}).(*Claim)
	return c, ok
}

// ExecuteOnce runs fn at most once per key within the retention window and returns its stored
// result to every call with the key, flagged as a replay after the first.
//
// fn runs under a lease that is renewed while it runs; its ctx is canceled with cause
// ErrLeaseLost if the lease cannot be kept. fn's result is stored even if the caller's ctx
// ended meanwhile (bounded by the commit timeout). If fn returns an error marked with
// Permanent, its message is stored and this and every later call get a *FailureError; any
// other error releases the claim, is returned unchanged and a retry runs fn again.
//
// Errors: ErrInvalidKey, ErrKeyReuse, *InProgressError, ErrLeaseLost (another worker took the
// claim over; the result was not stored), ErrResultTooLarge (nothing stored; the claim is
// released), *OutcomeUnknownError (retry the call), ctx.Err().
func (s *Store) ExecuteOnce(ctx context.Context, key Key, fn func(context.Context) ([]byte, error), opts ...CallOption) (Result, error) {
	var cc callConfig
	for _, o := range opts {
		o(&cc)
	}
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return Result{}, err
	}
	ck := ""
	if s.cache != nil {
		ck = cacheKey(key)
		if rec := s.cache.get(ck, time.Now()); rec != nil {
			if !equalFingerprint(rec.Fingerprint, cc.fingerprint) {
				s.record(Event{Kind: EventKeyReuse, Key: key})
				return Result{}, ErrKeyReuse
			}
			s.record(Event{Kind: EventCacheHit, Key: key})
			return Result{Value: rec.Result, Replay: true, FromCache: true, Attempts: rec.Attempts, Fence: rec.Fence}, nil
		}
	}
	fk := ck
	if fk == "" {
		fk = cacheKey(key)
	}
	// Every call registers, owned or not, before it reads the ownership, so that Own, which
	// registers the owner before it waits for the namespace's calls, waits for this one too.
	ns := namespaceOf(key, len(s.keyCols))
	for {
		running, done := s.fast.flights.Enter(fk, ns)
		if !running || s.ownerOf(ns) == nil {
			break
		}
		// Owned and already running here: its record may not exist yet (a fast path), so the
		// table cannot answer; this process can.
		s.fast.flights.Leave(fk)
		if !cc.wait {
			s.stats.inFlight.Add(1)
			s.record(Event{Kind: EventConflict, Key: key})
			return Result{}, &InProgressError{LeaseUntil: time.Now().Add(s.cfg.lease)}
		}
		select {
		case <-done:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	defer s.fast.flights.Leave(fk)
	o := s.ownerOf(ns)
	if o == nil {
		res, _, err := s.execute(ctx, key, ck, &cc, fn)
		return res, err
	}
	a := o.pre.Check(key[1].(string))
	if a.ClearlyNew() {
		return s.fastRun(ctx, key, ck, &cc, o, a, fn)
	}
	s.stats.fastLWT.Add(1)
	res, tableSaidNew, err := s.execute(ctx, key, ck, &cc, fn)
	if a.Verdict == bloom.MaybeSeen && (err == nil || tableSaidNew || errors.Is(err, ErrInProgress)) {
		o.pre.Observe(a, tableSaidNew)
		if tableSaidNew {
			s.stats.falsePositives.Add(1)
		}
	}
	return res, err
}

// namespaceOf is the scope of a key for the fast path: its first value, for tables keyed by
// two values; "" (never owned) otherwise.
func namespaceOf(key Key, cols int) string {
	if cols != 2 {
		return ""
	}
	ns, _ := key[0].(string)
	return ns
}

// execute is the LWT path. tableSaidNew reports that the claim created the record.
func (s *Store) execute(ctx context.Context, key Key, ck string, cc *callConfig, fn func(context.Context) ([]byte, error)) (res Result, tableSaidNew bool, err error) {
	for {
		claim, rec, err := s.Begin(ctx, key, cc.fingerprint)
		if err != nil && cc.wait && errors.Is(err, ErrInProgress) {
			if rec, err = s.wait(ctx, key, cc.fingerprint); err == nil && rec == nil {
				continue // the other claim ended without an answer: claim it ourselves
			}
		}
		if err != nil {
			return Result{}, false, err
		}
		if rec != nil {
			res, err := s.replay(ck, rec)
			return res, false, err
		}
		tableSaidNew = claim.Previous == nil && claim.Attempts == 1
		res, err := s.run(ctx, ck, cc.fingerprint, claim, fn)
		return res, tableSaidNew, err
	}
}

func equalFingerprint(a, b []byte) bool { return string(a) == string(b) }

func (s *Store) replay(ck string, rec *Record) (Result, error) {
	if rec.Status == StatusFailed {
		return Result{}, &FailureError{Message: string(rec.Result), Replay: true}
	}
	if s.cache != nil {
		s.cache.put(ck, rec)
	}
	return Result{Value: rec.Result, Replay: true, Attempts: rec.Attempts, Fence: rec.Fence}, nil
}

// wait polls the record until it is final (returned) or claimable (nil record).
func (s *Store) wait(ctx context.Context, key Key, fp []byte) (*Record, error) {
	delay := 10 * time.Millisecond
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		rec, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, err
		case !equalFingerprint(rec.Fingerprint, fp):
			s.record(Event{Kind: EventKeyReuse, Key: key})
			return nil, ErrKeyReuse
		case rec.Final():
			s.record(Event{Kind: EventReplay, Key: key})
			return rec, nil
		case rec.Status == StatusReleased || !time.Now().Before(rec.LeaseUntil):
			return nil, nil
		}
		delay = min(delay*2, s.cfg.lease/4, 500*time.Millisecond)
	}
}

// run calls fn under claim, renewing the lease, and ends the claim by its outcome.
func (s *Store) run(ctx context.Context, ck string, fp []byte, claim *Claim, fn func(context.Context) ([]byte, error)) (res Result, err error) {
	fnCtx, cancel := context.WithCancelCause(context.WithValue(ctx, claimCtxKey{}, claim))
	defer cancel(nil)
	stop := s.renewLease(fnCtx, cancel, claim)

	// The claim's end is written even if the caller's ctx has ended: the work is done.
	endCtx, endCancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.commitTimeout)
	defer endCancel()

	var value []byte
	var fnErr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				stop()
				_ = s.Release(endCtx, claim, []byte("panic"))
				panic(p)
			}
		}()
		value, fnErr = fn(fnCtx)
	}()
	stop()
	if errors.Is(context.Cause(fnCtx), ErrLeaseLost) {
		s.record(Event{Kind: EventLeaseLost, Key: claim.Key})
		return Result{}, ErrLeaseLost
	}
	base := Result{Attempts: claim.Attempts, Fence: claim.Fence}
	switch {
	case fnErr != nil && IsPermanent(fnErr):
		if err := s.Fail(endCtx, claim, []byte(fnErr.Error())); err != nil {
			return base, errors.Join(fnErr, err)
		}
		return base, &FailureError{Message: fnErr.Error(), Err: fnErr}
	case fnErr != nil:
		if err := s.Release(endCtx, claim, []byte(fnErr.Error())); err != nil {
			return base, errors.Join(fnErr, err)
		}
		return base, fnErr
	case len(value) > s.cfg.maxResult:
		tooLarge := fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(value), s.cfg.maxResult)
		if err := s.Release(endCtx, claim, []byte(tooLarge.Error())); err != nil {
			return base, errors.Join(tooLarge, err)
		}
		return base, tooLarge
	}
	if err := s.Complete(endCtx, claim, value); err != nil {
		return base, err
	}
	if s.cache != nil {
		s.cache.put(ck, &Record{Status: StatusCompleted, Fingerprint: fp, Owner: claim.Owner, Fence: claim.Fence,
			Attempts: claim.Attempts, Result: value, ExpiresAt: claim.ExpiresAt})
	}
	base.Value = value
	return base, nil
}

// renewLease starts the goroutine that keeps the claim's lease alive while fn runs. It cancels
// fn's ctx with ErrLeaseLost when the lease is lost or runs out unrenewed. The returned stop
// ends the goroutine and waits for it, so claim is not touched after stop returns.
func (s *Store) renewLease(ctx context.Context, cancel context.CancelCauseFunc, claim *Claim) (stop func()) {
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithDeadline(ctx, claim.LeaseUntil)
			err := s.Renew(rctx, claim)
			rcancel()
			if errors.Is(err, ErrLeaseLost) || (err != nil && !time.Now().Before(claim.LeaseUntil)) {
				cancel(ErrLeaseLost)
				return
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(quit)
			<-done
		}
	}
}
