package lwt

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/internal/loop"
)

// Result is the answer of ExecuteOnce.
type Result struct {
	Value     []byte
	Replay    bool // the value was stored by an earlier call; the function did not run now
	FromCache bool // the replay was served by the in-process cache
	// Created reports that this call made the key's first record: the table (or, on the fast
	// path, the warm pre-check) said the key was new.
	Created  bool
	Attempts int // claims made on the key (known when this call ran or read the record)
	Fence    int64
}

// CallOption configures one ExecuteOnce call. A nil one is ErrInvalidArgument.
type CallOption func(*callConfig) error

type callConfig struct {
	fingerprint []byte
	wait        bool
	at          time.Time
	repeatable  bool
}

// Fingerprint is the fingerprint WithRequest stores for request: its SHA-256.
func Fingerprint(request []byte) []byte {
	sum := sha256.Sum256(request)
	return sum[:]
}

// WithRequest sets the request the key stands for. Its Fingerprint is stored with the record; a
// later call with the same key and another request gets ErrKeyReuse and nothing runs. Without
// it every request with the key matches.
func WithRequest(request []byte) CallOption {
	return func(c *callConfig) error { c.fingerprint = Fingerprint(request); return nil }
}

// WithWait makes a duplicate that meets a live claim wait, within its ctx, for the stored
// result instead of returning ErrInProgress; if the other claim is released or its lease
// passes, this call claims the key and runs the function itself.
func WithWait() CallOption {
	return func(c *callConfig) error { c.wait = true; return nil }
}

// callOptions applies opts. The config is allocated only when there are options: a call
// without any, answered from the cache, allocates nothing.
func callOptions(opts []CallOption) (callConfig, error) {
	if len(opts) == 0 {
		return callConfig{}, nil
	}
	cc := new(callConfig)
	for _, o := range opts {
		if o == nil {
			return callConfig{}, fmt.Errorf("%w: nil CallOption", ErrInvalidArgument)
		}
		if err := o(cc); err != nil {
			return callConfig{}, err
		}
	}
	return *cc, nil
}

// fromCache answers a call of key with rec, its cached record. The call's options are applied
// only here, and only if there are any: a hit without options builds no call configuration.
func (s *Store) fromCache(ctx context.Context, key Key, rec *Record, opts []CallOption) (Result, error) {
	var fp []byte
	if len(opts) > 0 {
		cc, err := callOptions(opts)
		if err != nil {
			return Result{}, err
		}
		fp = cc.fingerprint
	}
	_, end := s.startSpan(ctx, "execute", key)
	res, err := s.answerCached(key, rec, fp)
	end(err)
	return res, err
}

// answerCached answers a call with fingerprint fp from rec, a record of the cache, in the
// caller's span.
func (s *Store) answerCached(key Key, rec *Record, fp []byte) (Result, error) {
	if !equalFingerprint(rec.Fingerprint, fp) {
		s.record(Observation{Kind: ObservedKeyReuse, Key: key})
		return Result{}, ErrKeyReuse
	}
	s.record(Observation{Kind: ObservedCacheHit, Key: key})
	return Result{Value: rec.Result, Replay: true, FromCache: true, Attempts: rec.Attempts, Fence: rec.Fence}, nil
}

// WithTime gives the operation's own time, set once where it began (a message's producer
// timestamp): the fast path vouches for an operation only while that time is within its
// pre-check's horizon (see Store.Own). Without it, only a pre-check that covers the whole
// retention may answer for the call.
func WithTime(t time.Time) CallOption {
	return func(c *callConfig) error { c.at = t; return nil }
}

// call is one ExecuteOnce call's arguments, worked out once.
type call struct {
	key         Key
	cacheKey    string
	fingerprint []byte
	wait        bool
	at          time.Time
	repeatable  bool // WithRepeatableFunction: run fn first, commit with one conditional insert
	fn          func(context.Context) ([]byte, error)
	endCommit   func(error) // ends the commit span that began when fn returned (see traced)
}

// ExecuteOnce runs fn to completion at most once per key within the retention window and
// returns its stored result to every call with the key, flagged as a replay after the first.
//
// fn MAY START AGAIN after a crash. "At most once" is about completions: if the process dies
// (or loses its lease) after fn began and before its result was stored, the next call with the
// key claims it again once the lease has passed and runs fn again, so fn's external effects
// (a card charge, a row in another table, a message to another service) can happen twice
// unless they are themselves idempotent. Make them so: derive every external id from the key
// (a charge id, a payment provider's idempotency key, a row's primary key), so a second attempt
// repeats the first instead of adding to it; and fence downstream writes with the claim's token
// (ClaimFromContext: a store that keeps the highest Fence it saw refuses a stale attempt's
// write). Writes that must commit with the result belong in the result or in the store's
// completion (package outbox's Stage), which are written only by the conditional write that
// completes the claim.
//
// fn runs under a lease that is renewed while it runs and while its result is stored; its ctx
// is canceled with cause ErrLeaseLost if the lease cannot be kept. fn's result is stored even if
// the caller's ctx ended meanwhile: a store whose outcome is unknown is read back at the serial
// consistency and sent again, with backoff, for the commit timeout (WithCommitTimeout). If fn
// returns an error marked with Permanent, its message is stored and this and every later call
// get a *FailureError; any other error releases the claim, is returned unchanged and a retry runs
// fn again. A panic in fn releases the claim and is re-raised.
//
// Errors: ErrInvalidKey and ErrInvalidArgument (nothing ran or was written), ErrKeyReuse,
// *InProgressError, ErrLeaseLost (another worker took the claim over; the result was not
// stored), ErrResultTooLarge (nothing stored; the claim is released), *cas.OutcomeUnknownError (see
// ErrOutcomeUnknown for what a retry does), ctx.Err() while claiming or waiting, fn's own error,
// or a driver error from a claim that certainly did not apply.
func (s *Store) ExecuteOnce(ctx context.Context, key Key, fn func(context.Context) ([]byte, error), opts ...CallOption) (Result, error) {
	if err := s.checkCall(ctx); err != nil {
		return Result{}, err
	}
	if fn == nil {
		return Result{}, fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	// A duplicate of a completed key is answered before anything is allocated for the call:
	// it is what a retry storm or a redelivery loop mostly sends.
	if s.cache != nil {
		// The key is not validated first: only valid keys are cached, so an invalid one
		// misses and is validated on the way to the node.
		if rec := s.cache.get(key); rec != nil {
			return s.fromCache(ctx, key, rec, opts)
		}
	}
	cc, err := callOptions(opts)
	if err != nil {
		return Result{}, err
	}
	return s.executeOnce(ctx, key, fn, cc)
}

// executeOnce is ExecuteOnce past the cache. It is a function of its own so that a cache hit
// pays for none of its deferred calls.
func (s *Store) executeOnce(ctx context.Context, key Key, fn func(context.Context) ([]byte, error), cc callConfig) (_ Result, err error) {
	ctx, end := s.startSpan(ctx, "execute", key)
	defer func() { end(err) }()
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return Result{}, err
	}
	c := &call{key: key, cacheKey: cacheKey(key), fingerprint: cc.fingerprint, wait: cc.wait, at: cc.at, repeatable: cc.repeatable}
	c.fn = s.traced(c, fn)
	defer func() { c.endCommit(err) }()
	scope, last, scoped := scopeOf(key)
	// Every call registers before it reads the ownership, so that Own, which registers the
	// owner before it waits for the scope's calls, waits for this one too.
	switch rec, err := s.enter(ctx, c, scope); {
	case err != nil:
		return Result{}, err
	case rec != nil: // a run of the key in this process committed while this call waited
		return s.answerCached(key, rec, c.fingerprint)
	}
	defer s.fast.flights.Leave(c.cacheKey)
	o := s.ownerOf(scope)
	if !scoped || o == nil {
		return s.execute(ctx, c)
	}
	k, ok := last.(string)
	if !ok {
		return Result{}, &KeyError{Column: s.keyCols[len(s.keyCols)-1], Reason: fmt.Sprintf("the fast path needs a string key, not %T", last)}
	}
	if !s.live(o.lease) {
		return Result{}, s.noLease(key)
	}
	clearlyNew, maybeSeen, epoch := s.admit(o, k, c.at)
	if clearlyNew {
		return s.fastRun(ctx, c, scope, o, epoch)
	}
	s.stats.fastLWT.Add(1)
	res, err := s.execute(ctx, c)
	// Observe only what the table answered: an error may have left it unknown.
	if maybeSeen && (err == nil || res.Created || errors.Is(err, ErrInProgress)) {
		o.pre.ObserveMaybeSeen(res.Created)
		if res.Created {
			s.stats.falsePositives.Add(1)
		}
	}
	return res, err
}

// enter registers c as running in this process. A call of a key already running here is
// answered without a round trip: ErrInProgress, or, with WithWait, a wait for that call to end.
// A repeatable call of a running key waits for it when the store has a cache, and returns the
// record that call committed (rec) if the cache holds it; otherwise it registers and races.
func (s *Store) enter(ctx context.Context, c *call, scope string) (rec *Record, err error) {
	joined := false
	for {
		running, done := s.fast.flights.Enter(c.cacheKey, scope)
		repeatable := c.repeatable && s.ownerOf(scope) == nil
		if !running || (repeatable && s.cache == nil) {
			// A repeatable call of a running key races it to the table, where the loser
			// replays the winner's result, as it would from another process. It stays
			// registered, so an Own that begins meanwhile waits for it; under an owned scope
			// the fast path's plain write needs the key to itself, so there it waits its turn.
			return nil, nil
		}
		s.fast.flights.Leave(c.cacheKey)
		if !c.wait && !repeatable {
			s.stats.inFlight.Add(1)
			s.record(Observation{Kind: ObservedConflict, Key: c.key})
			return nil, &InProgressError{LeaseUntil: s.now().Add(s.cfg.lease)}
		}
		// A repeatable call waits rather than racing when the running call's commit will be in
		// the cache: a client's retry or double submit then costs neither a second run of the
		// function nor a second Paxos round. If that call committed nothing (it failed, or its
		// outcome is unknown), this one runs as if it came first.
		if repeatable && !joined {
			joined = true
			s.stats.joined.Add(1)
		}
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if repeatable {
			if rec := s.cache.get(c.key); rec != nil {
				return rec, nil
			}
		}
	}
}

// execute is the LWT path.
func (s *Store) execute(ctx context.Context, c *call) (Result, error) {
	if c.repeatable {
		res, claim, err := s.runRepeatable(ctx, c)
		if !claim {
			return res, err
		}
		// The key has a record to claim (RELEASED, or STARTED past its lease): claim it as
		// ExecuteOnce does, and run fn again under the claim.
		c.endCommit(nil)
		c.endCommit = noEnd
	}
	for {
		cctx, end := s.startSpan(ctx, "claim", c.key)
		claim, rec, err := s.Begin(cctx, c.key, c.fingerprint)
		end(err)
		if err != nil && c.wait && errors.Is(err, ErrInProgress) {
			if rec, err = s.wait(ctx, c.key, c.fingerprint); err == nil && rec == nil {
				continue // the other claim ended without an answer: claim it ourselves
			}
		}
		if err != nil {
			return Result{}, err
		}
		if rec != nil {
			return s.replay(c.key, rec)
		}
		return s.run(ctx, c, claim)
	}
}

func equalFingerprint(a, b []byte) bool { return string(a) == string(b) }

func (s *Store) replay(key Key, rec *Record) (Result, error) {
	if rec.Status == StatusFailed {
		return Result{}, &FailureError{Message: string(rec.Result), Replay: true}
	}
	if s.cache != nil {
		s.cache.put(key, rec)
	}
	return Result{Value: rec.Result, Replay: true, Attempts: rec.Attempts, Fence: rec.Fence}, nil
}

// wait polls the record until it is final (returned) or claimable (nil record). A failed read
// is retried at the next poll: only ctx ends the wait without an answer.
func (s *Store) wait(ctx context.Context, key Key, fp []byte) (*Record, error) {
	delay := 10 * time.Millisecond
	for {
		if err := loop.Sleep(ctx, delay); err != nil {
			return nil, err
		}
		delay = min(delay*2, s.cfg.lease/4, 500*time.Millisecond)
		rec, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, nil
		case err != nil:
			continue
		case !equalFingerprint(rec.Fingerprint, fp):
			s.record(Observation{Kind: ObservedKeyReuse, Key: key})
			return nil, ErrKeyReuse
		case rec.Final():
			s.record(Observation{Kind: ObservedReplay, Key: key})
			return rec, nil
		case rec.Status == StatusReleased || !rec.LeaseLive(s.now()):
			return nil, nil
		}
	}
}

// claimCtxKey keys the claim holder in fn's ctx.
type claimCtxKey struct{}

// claimHolder publishes a running claim to fn: the renewal goroutine updates the lease while
// fn may read it, so reads take a copy under the lock.
type claimHolder struct {
	mu    sync.Mutex
	claim Claim
}

func (h *claimHolder) renewed(until time.Time) {
	h.mu.Lock()
	h.claim.LeaseUntil = until
	h.mu.Unlock()
}

// ClaimFromContext returns a copy of the claim under which the function passed to ExecuteOnce
// runs, with its lease as last renewed, so it can hand the fencing token to systems that
// reject stale writers. It is safe to call while the lease is being renewed; the copy does not
// change afterwards. ok is false outside a claimed run (on the fast path there is no claim). In a
// run of WithRepeatableFunction there is no claim either: the Claim returned names the record
// its commit will write (Claim.CommitBy is set) and its Fence fences nothing.
func ClaimFromContext(ctx context.Context) (*Claim, bool) {
	h, ok := ctx.Value(claimCtxKey{}).(*claimHolder)
	if !ok {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.claim
	return &c, true
}
