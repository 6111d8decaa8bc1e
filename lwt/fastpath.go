package lwt

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/cassdedup/cassdedup/internal/flights"
	"github.com/cassdedup/cassdedup/internal/loop"
)

// PreCheck is what the fast path needs from a Bloom pre-check of one scope this store owns;
// *bloom.PreCheck satisfies it. Implementations must be safe for concurrent use.
type PreCheck interface {
	// Admit records key and answers, atomically per key (of racing callers at most one is told
	// clearlyNew): clearlyNew when the pre-check is warm for its owner at epoch and never saw
	// the key; maybeSeen when it is warm and may have seen it. Neither while it is cold or
	// warming.
	Admit(key string) (clearlyNew, maybeSeen bool, epoch uint64)
	// ObserveMaybeSeen reports what the table said about a key Admit answered maybeSeen:
	// tableSaidNew true is an observed false positive.
	ObserveMaybeSeen(tableSaidNew bool)
	// Owns reports whether the pre-check is still warm at epoch.
	Owns(epoch uint64) bool
	// WarmUp loads every key keys yields and makes the pre-check warm at epoch; it records the
	// keys Admit is asked about meanwhile.
	WarmUp(ctx context.Context, epoch uint64, keys KeySource) error
	// Invalidate makes the pre-check cold at once.
	Invalidate()
	// Retention is the horizon the pre-check vouches for: a key it admitted, or loaded with a
	// write time, is remembered at least this long after that time.
	Retention() time.Duration
}

// MaxClockSkew is how far the time an operation carries (WithTime, a message's producer
// timestamp) may be from this process's clock. The fast path vouches for an operation only
// while its time is within the pre-check's horizon less this skew, and sends one that claims
// to come from further in the future to the LWT path.
const MaxClockSkew = time.Minute

// KeySource yields the keys of one scope still within the retention: yield(key, written), where
// written is the latest time the key may have been written (zero: unknown). It stops and
// returns yield's error if yield returns one, and ctx.Err() when ctx ends.
type KeySource = func(ctx context.Context, yield func(key string, written time.Time) error) error

// owner is one registered ownership: compared by pointer, so a fast path that began under it
// can tell whether it still holds when fn returns.
type owner struct {
	pre   PreCheck
	epoch uint64
	lease *lease // its hold on the scope in scope_owners
}

// fastState is the store's fast-path state: owned scopes and the calls running here.
type fastState struct {
	mu    sync.Mutex
	owned map[string]*owner // by cacheKey of the scope
	// flights are the calls running in this process, by cacheKey of the key and scoped by the
	// cacheKey of the scope. A second call of a running key is answered here without a round
	// trip; on the fast path only this set can, since the table holds no row until fn returns.
	flights flights.Set[string, string]
}

// scopeOf splits key into the fast path's scope (every value but the last) and the key within
// it (the last value, which must be a string). ok is false when the key has no scope.
func scopeOf(key Key) (scope string, last any, ok bool) {
	if len(key) < 2 {
		return "", nil, false
	}
	return cacheKey(key[:len(key)-1]), key[len(key)-1], true
}

// Own declares that every call whose key starts with scope (all key values but the last:
// Key{namespace} for idempotency_keys, Key{group, topic, partition} for processed_messages)
// reaches this process from now on — a sticky router or a broker assigned it at epoch, which
// must grow on every assignment — and turns the fast path on for it. pre is warmed from src,
// which must yield every key of the scope written within pre's horizon (pre.Retention()) plus
// MaxClockSkew; from then on a key pre answers clearly new runs fn without a claim and is
// recorded with PutCompleted (or the store's WithRecorder, for calls with WithTime).
//
// The pre-check vouches only for its horizon: a call whose time (WithTime) is older than the
// horizon less MaxClockSkew, and a call without a time unless the horizon covers the retention
// plus the commit timeout, takes the LWT path, so no setting lets a forgotten key be run
// again. A horizon of 2*MaxClockSkew or less vouches for nothing and is refused with
// ErrInvalidArgument. Own first waits
// for the scope's calls already running here, so src need not know keys they are adding. The
// last key value must be a string.
//
// Ownership is recorded and fenced on the server (table scope_owners, WithOwnersTable, always
// at SERIAL whatever WithSerialConsistency says; ErrSerialUnavailable when the cluster cannot
// reach it): Own takes the scope with a conditional write of epoch, then waits until the
// previous owner's lease cell has expired by Cassandra's clock (at most the previous owner's
// lease, WithOwnership; at once after its Disown) and sets its own, which a goroutine renews
// every third of the lease until Disown; before its warm-up reads, it waits out the cluster's
// write_request_timeout (WithWriteRequestTimeout), by when a record write the previous owner
// sent before its deadline has been applied or dropped. At the server's epoch, another holder's
// scope is taken the same way once its lease cell has expired (a restarted static group
// member); a holder whose lease stays live for a whole lease meanwhile is not taken from
// (ErrSuperseded). Below the server's epoch, Own gives ErrSuperseded while the row's holder has
// a live lease, and ErrEpochRegressed when none has (the epochs went back: see its doc). The
// fast path admits only until a local monotonic deadline a margin before the lease could
// expire; past it, or once a renewal finds the scope taken at a newer epoch, every call of the
// scope gets ErrNoLease, since even the LWT path could meet the new owner's fast path. So do
// not process the scope before Own returns (its calls get ErrNoLease meanwhile). On an error the
// scope is not owned: call Own again before processing it. Call Disown as soon as the scope is
// reassigned or its assignment is in doubt.
func (s *Store) Own(ctx context.Context, scope Key, epoch uint64, pre PreCheck, src KeySource) error {
	if err := s.checkOwn(ctx, scope, epoch, pre, src); err != nil {
		return err
	}
	sk := cacheKey(scope)
	// Cold at once: an answer from an earlier warm-up of pre must not be acted on now.
	pre.Invalidate()
	o := &owner{pre: pre, epoch: epoch, lease: &lease{scope: []byte(sk), key: scope, epoch: int64(epoch)}}
	s.installOwner(sk, o)
	fail := func(err error) error {
		s.dropOwner(sk, o)
		return fmt.Errorf("lwt: own %v at epoch %d: %w", scope, epoch, err)
	}
	// The server first: the epoch, which fences every older owner's renewal, then the lease,
	// which waits until the previous owner's fast path cannot admit anything more.
	if err := s.take(ctx, o.lease); err != nil {
		return fail(err)
	}
	if err := s.acquire(ctx, o.lease); err != nil {
		return fail(err)
	}
	o.lease.stop = s.renewEvery(o.lease, pre.Invalidate)
	// A record write of the previous owner may still be on its way to a replica: after the
	// cluster's write_request_timeout it has been applied or dropped (WithWriteRequestTimeout).
	if err := loop.Sleep(ctx, s.cfg.ownerSettle); err != nil {
		return fail(err)
	}
	// The wait runs inside the warm-up, after pre began recording every key it is asked about.
	err := pre.WarmUp(ctx, epoch, func(ctx context.Context, yield func(string, time.Time) error) error {
		if err := s.fast.flights.Wait(ctx, sk); err != nil {
			return err
		}
		return src(ctx, yield)
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// checkOwn refuses an Own the store or its arguments cannot honour.
func (s *Store) checkOwn(ctx context.Context, scope Key, epoch uint64, pre PreCheck, src KeySource) error {
	if err := s.checkCall(ctx); err != nil {
		return err
	}
	if len(s.keyCols) < 2 {
		return &KeyError{Column: s.keyCols[0], Reason: "the fast path needs a table keyed by a scope and a key"}
	}
	if err := validateKey(s.keyCols[:len(s.keyCols)-1], scope, s.cfg.maxKey); err != nil {
		return err
	}
	if pre == nil || src == nil {
		return fmt.Errorf("%w: own %v: nil pre-check or key source", ErrInvalidArgument, scope)
	}
	if h := pre.Retention(); h <= 2*MaxClockSkew {
		return fmt.Errorf("%w: own %v: a pre-check horizon of %v vouches for nothing; it must exceed %v",
			ErrInvalidArgument, scope, h, 2*MaxClockSkew)
	}
	if epoch > math.MaxInt64 {
		return fmt.Errorf("%w: own %v: epoch %d exceeds a bigint", ErrInvalidArgument, scope, epoch)
	}
	return nil
}

// installOwner makes o the owner of scope sk in this store, and ends the owner it replaces:
// its pre-check goes cold (if it is not o's) and its lease is released.
func (s *Store) installOwner(sk string, o *owner) {
	s.fast.mu.Lock()
	old := s.fast.owned[sk]
	if s.fast.owned == nil {
		s.fast.owned = map[string]*owner{}
	}
	s.fast.owned[sk] = o
	s.fast.mu.Unlock()
	if old != nil {
		if old.pre != o.pre {
			old.pre.Invalidate()
		}
		s.release(old.lease)
	}
}

// dropOwner undoes installOwner after an Own failed: o stops owning sk (unless a later Own
// replaced it already) and its lease is released.
func (s *Store) dropOwner(sk string, o *owner) {
	s.fast.mu.Lock()
	if s.fast.owned[sk] == o {
		delete(s.fast.owned, sk)
	}
	s.fast.mu.Unlock()
	s.release(o.lease)
}

// Disown turns the fast path off for scope and makes its pre-check cold, waits for the fast-path
// writes that passed their ownership check, stops the lease's renewal and releases the lease on
// the server, so the next owner need not wait for it. A fast-path fn still running finds the
// ownership gone when it returns and records its key with PutCompletedIfNotExists instead.
func (s *Store) Disown(scope Key) {
	if s == nil {
		return
	}
	sk := cacheKey(scope)
	s.fast.mu.Lock()
	o := s.fast.owned[sk]
	delete(s.fast.owned, sk)
	s.fast.mu.Unlock()
	if o != nil {
		o.pre.Invalidate()
		s.release(o.lease)
	}
}

// ownerOf returns the scope's registered owner, nil when the store does not own it.
func (s *Store) ownerOf(scope string) *owner {
	s.fast.mu.Lock()
	defer s.fast.mu.Unlock()
	return s.fast.owned[scope]
}

func (s *Store) owns(scope string, o *owner, epoch uint64) bool {
	return s.ownerOf(scope) == o && o.pre.Owns(epoch) && s.live(o.lease)
}

// hold reports whether the store still owns scope at epoch under a live lease and, if so, holds
// the lease for one fast-path write and returns the lease's deadline on the wall clock: the
// write must be sent before it or not at all, and Disown waits for the write (done) before it
// releases the lease on the server. Nothing but the write may follow this check: the time from
// it to the write's arrival at a replica is the fast path's remaining assumption (WithOwnership).
func (s *Store) hold(scope string, o *owner, epoch uint64) (deadline time.Time, done func(), ok bool) {
	s.fast.mu.Lock()
	defer s.fast.mu.Unlock()
	d, now := o.lease.deadline.Load(), s.mono()
	if s.fast.owned[scope] != o || !o.pre.Owns(epoch) || d == 0 || now >= d {
		return time.Time{}, nil, false
	}
	o.lease.writes.Add(1)
	return time.Now().Add(time.Duration(d - now)), o.lease.writes.Done, true
}

// Owns reports whether the store holds the fast path of scope (see Own): its calls may skip
// the claim. A caller that writes something only the LWT path needs may skip it then.
func (s *Store) Owns(scope Key) bool { return s.ownerOf(cacheKey(scope)) != nil }

// vouches reports whether o's pre-check can answer for an operation of time at (zero: none).
// A key is remembered for the horizon after it was admitted or loaded, and no operation is
// first run before its own time less MaxClockSkew, so every key of an operation whose time is
// within the horizon less the skew is still remembered. An operation without a time can be
// answered only by a pre-check that remembers keys as long as their records live, plus the
// commit timeout a fast-path write may take after admission.
func (s *Store) vouches(o *owner, at time.Time) bool {
	h := o.pre.Retention()
	if at.IsZero() {
		return h >= s.cfg.retention+s.cfg.commitTimeout
	}
	now := s.now()
	return !at.After(now.Add(MaxClockSkew)) && now.Sub(at) <= h-MaxClockSkew
}

// admit asks o's pre-check about key k of a call of time at; an operation it cannot vouch
// for is neither clearly new nor maybe seen, and takes the LWT path.
func (s *Store) admit(o *owner, k string, at time.Time) (clearlyNew, maybeSeen bool, epoch uint64) {
	if !s.live(o.lease) || !s.vouches(o, at) {
		return false, false, 0
	}
	return o.pre.Admit(k)
}

// fastRun is the fast path: the warm pre-check of the scope this store owns never saw the key,
// so no record exists and no other call of the key can reach the table before this one returns
// (other processes do not receive the scope; this one's flights hold its calls). fn runs without
// a claim, and its result is recorded by a plain write. A plain write beside LWTs on one row can
// be lost (LWT cells carry Paxos ballot timestamps); here no LWT has touched the row and none can
// until this write is acknowledged. Under violated ownership another process can claim the row
// meanwhile: fn runs twice and the writes merge cell by cell (see package events' measurements).
// An error from fn writes nothing, permanent or not: the next call takes the LWT path and runs
// fn again.
func (s *Store) fastRun(ctx context.Context, call *call, scope string, o *owner, epoch uint64) (Result, error) {
	s.stats.fastPath.Add(1)
	s.record(Observation{Kind: ObservedFastPath, Key: call.key})
	// The record is placed before fn and the ownership check, so that nothing but its write
	// stands between that check and the write (the Recorder may read, a layout say).
	var write RecordWrite
	if !call.at.IsZero() && s.cfg.recorder != nil {
		var err error
		if write, err = s.cfg.recorder(ctx, call.key, call.at); err != nil {
			s.stats.fastFailed.Add(1)
			return Result{}, err
		}
	}
	// fn may not outlive the lease it was admitted under: past it, another owner may run the key.
	fctx, cancel := context.WithDeadline(ctx, s.wallDeadline(o.lease))
	value, err := call.fn(fctx)
	cancel()
	if err == nil && len(value) > s.cfg.maxResult {
		err = fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(value), s.cfg.maxResult)
	}
	if err != nil {
		s.stats.fastFailed.Add(1)
		return Result{}, err
	}
	deadline, done, owned := s.hold(scope, o, epoch)
	if !owned {
		return s.fastStale(ctx, call, value, epoch, write)
	}
	defer done()
	// Sent before the deadline of the lease the check found, or not at all: a write sent after
	// it could reach the table after the next owner's warm-up read it (docs/fastpath.md).
	wctx, cancel := DeadlineContext(ctx, deadline)
	defer cancel()
	var rec *Record
	if write != nil {
		err = write(wctx, call.fingerprint, value, epoch)
	} else {
		rec, err = s.PutCompleted(wctx, call.key, call.fingerprint, value, epoch)
	}
	if err != nil {
		if wctx.Err() != nil {
			return Result{}, fmt.Errorf("lwt: record %v: the lease's deadline passed: %w", call.key, err)
		}
		return Result{}, err
	}
	if rec == nil {
		rec = &Record{Status: StatusCompleted, Fingerprint: call.fingerprint, Result: value, Attempts: 1,
			ExpiresAt: s.now().Add(s.cfg.retention), Epoch: int64(epoch)}
	}
	if s.cache != nil {
		s.cache.put(call.key, rec)
	}
	return Result{Value: value, Attempts: 1, Created: true}, nil
}

// fastStale records a fast-path call whose ownership ended while fn ran: with a conditional
// write, which cannot overwrite a record the scope's new owner made, and through write (the
// Recorder's, nil for none) too.
func (s *Store) fastStale(ctx context.Context, call *call, value []byte, epoch uint64, write RecordWrite) (Result, error) {
	s.stats.staleEpoch.Add(1)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.commitTimeout)
	defer cancel()
	existing, err := s.putIfNotExists(wctx, call, value, epoch)
	if err != nil {
		return Result{}, err
	}
	if existing != nil {
		// The new owner stored a result first: every caller gets that one.
		s.stats.staleConflicts.Add(1)
		if existing.Final() {
			// fn did run now, so this is no replay; the value is the stored one.
			res, err := s.replay(call.key, existing)
			res.Replay = false
			return res, err
		}
		return Result{}, &InProgressError{LeaseUntil: existing.LeaseUntil, Attempts: existing.Attempts}
	}
	// The conditional write settled who ran the key first, but only the Recorder's table is
	// read by a later owner's warm-up for a timed call (no index row was written for it):
	// without this write, the next owner would find the key clearly new and run it again.
	if write != nil {
		if err := write(wctx, call.fingerprint, value, epoch); err != nil {
			return Result{}, err
		}
	}
	if s.cache != nil {
		s.cache.put(call.key, &Record{Status: StatusCompleted, Fingerprint: call.fingerprint, Result: value,
			Attempts: 1, ExpiresAt: s.now().Add(s.cfg.retention)})
	}
	return Result{Value: value, Attempts: 1, Created: true}, nil
}

// putIfNotExists writes the fast path's record conditionally until it applies (nil) or finds a
// record (returned). A put whose outcome was unknown and which a serial read found absent did
// not apply, so it is sent again while ctx lasts.
func (s *Store) putIfNotExists(ctx context.Context, call *call, value []byte, epoch uint64) (*Record, error) {
	for {
		applied, existing, err := s.PutCompletedIfNotExists(ctx, call.key, call.fingerprint, value, epoch)
		if err != nil || applied || existing != nil {
			return existing, err
		}
		if err := loop.Sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, fmt.Errorf("lwt: put not applied: %w", err)
		}
	}
}
