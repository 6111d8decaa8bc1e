package lwt

import (
	"context"
	"fmt"
	"time"
)

// This file is lwt's seam for packages built on it (package guard): the fast path's admission
// of one key without ExecuteOnce (Store.Enter, Pass), the record placement of timed calls
// (Recorder, RecordWrite, WithRecorder), the contexts such a caller runs its writes and work in
// (DeadlineContext, ContextWithClaim), and the checks its own options share with lwt's
// (OwnershipProblem, WriteRequestTimeoutProblem). A service that calls ExecuteOnce, Execute or
// Begin does not need any of it. The batch store (batch_*.go) is the other half of the seam;
// doc.go, "For packages built on lwt", lists both.

// Pass is one key's admission to the fast path, for callers that record many keys with one
// write of their own (package guard's ProcessBatch) instead of one ExecuteOnce each. It holds
// the key's place among the calls running in this process until Leave, exactly as ExecuteOnce
// does, so a second call of the key here gets InProgress and a new owner's Own waits for it.
type Pass struct {
	s          *Store
	ck         string
	scope      string
	o          *owner
	epoch      uint64
	clearlyNew bool
	maybeSeen  bool
}

// Enter registers a call of key, a key of this store's table, with the operation time at
// (zero: none), and asks the pre-check of its scope, if the store owns it, whether it is
// clearly new, applying the horizon rule of Own. A call of key already running in this process
// gets an *InProgressError and no Pass. Every Pass must be left with Leave.
func (s *Store) Enter(ctx context.Context, key Key, at time.Time) (*Pass, error) {
	if err := validateKey(s.keyCols, key, s.cfg.maxKey); err != nil {
		return nil, err
	}
	scope, last, scoped := scopeOf(key)
	c := &call{key: key, cacheKey: cacheKey(key)}
	if _, err := s.enter(ctx, c, scope); err != nil { // not repeatable: no record comes back
		return nil, err
	}
	p := &Pass{s: s, ck: c.cacheKey, scope: scope}
	o := s.ownerOf(scope)
	if !scoped || o == nil {
		return p, nil
	}
	k, ok := last.(string)
	if !ok {
		s.fast.flights.Leave(c.cacheKey)
		return nil, &KeyError{Column: s.keyCols[len(s.keyCols)-1], Reason: fmt.Sprintf("the fast path needs a string key, not %T", last)}
	}
	if !s.live(o.lease) {
		s.fast.flights.Leave(c.cacheKey)
		return nil, s.noLease(key)
	}
	p.o = o
	p.clearlyNew, p.maybeSeen, p.epoch = s.admit(o, k, at)
	if p.clearlyNew {
		s.stats.fastPath.Add(1)
		s.record(Observation{Kind: ObservedFastPath, Key: key})
	} else {
		s.stats.fastLWT.Add(1)
	}
	return p, nil
}

// ClearlyNew reports whether the key may take the fast path: run without a claim, then be
// recorded by a plain write that carries Epoch, while Owned still holds.
func (p *Pass) ClearlyNew() bool { return p.clearlyNew }

// Deadline is when the lease the key was admitted under stops being provably this store's:
// the operation of a fast-path key must not take effect after it (give it a context with this
// deadline).
func (p *Pass) Deadline() time.Time {
	if p.o == nil {
		return time.Time{}
	}
	return p.s.wallDeadline(p.o.lease)
}

// Epoch is the ownership epoch the pre-check answered under.
func (p *Pass) Epoch() uint64 { return p.epoch }

// Owned reports whether the store still owns the key's scope at Epoch under a live lease.
func (p *Pass) Owned() bool { return p.o != nil && p.s.owns(p.scope, p.o, p.epoch) }

// Hold is Owned for the plain write that records the key: call it after the operation ran and
// right before the write, and call done once the write has ended, so that Disown does not
// release the scope's lease on the server while the write is on its way. The write must be sent
// before deadline or not at all: give it a context that ends then. When ok is false, record the
// key with a conditional write instead (another owner may have run it meanwhile). Nothing but
// the write may stand between Hold and the write: the time from Hold to the write's arrival at
// a replica must stay under the ownership margin (WithOwnership; docs/fastpath.md).
func (p *Pass) Hold() (deadline time.Time, done func(), ok bool) {
	if p.o == nil {
		return time.Time{}, nil, false
	}
	return p.s.hold(p.scope, p.o, p.epoch)
}

// Failed counts a fast-path operation that failed and wrote nothing; the key's next call takes
// the LWT path, since the pre-check remembers it.
func (p *Pass) Failed() { p.s.stats.fastFailed.Add(1) }

// Stale counts a fast-path key recorded by a conditional write because ownership moved while it
// ran; conflict reports that the write found a record another owner made (it ran twice).
func (p *Pass) Stale(conflict bool) {
	p.s.stats.staleEpoch.Add(1)
	if conflict {
		p.s.stats.staleConflicts.Add(1)
	}
}

// Leave ends the call's place among the calls running in this process.
func (p *Pass) Leave() { p.s.fast.flights.Leave(p.ck) }

// Recorder places the record of a call that took the fast path with a time of its own
// (WithTime), in place of PutCompleted: key is the call's key and at its time. It runs before
// the call's function and may read what the placement needs (a layout, say); the RecordWrite it
// returns runs after the ownership check and must make the one write and nothing else, since
// every instant between that check and the write's arrival counts against the ownership margin
// (WithOwnership). The record must go in one write to a table that the scope's warm-up reads
// (partitions of the scope grouped by the operation's time), and that the LWT path consults, so
// that the record is its own index: a later owner's warm-up sees every id whose record exists,
// and no second write stands between the function and the answer.
type Recorder func(ctx context.Context, key Key, at time.Time) (RecordWrite, error)

// RecordWrite writes a record placed by a Recorder: epoch is the ownership epoch the pre-check
// answered under. ctx ends when the lease the call was admitted under can no longer be relied
// on: a write not sent by then must not be sent at all.
type RecordWrite func(ctx context.Context, fingerprint, result []byte, epoch uint64) error

// WithRecorder sets the Recorder of the fast path's timed calls (default none: PutCompleted).
func WithRecorder(r Recorder) StoreOnlyOption {
	return func(c *config) error {
		if r == nil {
			return invalidOption("WithRecorder", "nil recorder")
		}
		c.recorder = r
		return nil
	}
}

// DeadlineContext returns a context for a fast-path record's write: it keeps ctx's values but not
// its cancellation (the operation ran; its record is written even if the caller gave up) and
// ends at deadline, the lease's (Pass.Hold). Its Err looks at the clock too: after a pause of
// the process (a stop, a long GC) the context's timer fires a moment after the process resumes,
// and a driver resumed first, which looks at Err before it sends the request, would send the
// write after the deadline meanwhile.
func DeadlineContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	c, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	return clocked{Context: c, deadline: deadline}, cancel
}

// clocked is a context whose Err reports its deadline as soon as the clock passed it.
type clocked struct {
	context.Context
	deadline time.Time
}

func (c clocked) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// ContextWithClaim returns a ctx from which ClaimFromContext returns a copy of c: for work run
// under a claim that the caller made itself, such as one of BatchStore.BeginBatch, so that code
// written for ExecuteOnce's fn finds its fencing token the same way.
func ContextWithClaim(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimCtxKey{}, &claimHolder{claim: *c})
}

// OwnershipProblem returns why lease and margin cannot be WithOwnership's, or "" when they can:
// the margin at least MinOwnerMargin, the lease whole seconds, at least twice the margin and at
// most MaxOwnerLease. guard.WithOwnership checks with it too.
func OwnershipProblem(lease, margin time.Duration) string {
	if margin < MinOwnerMargin || lease < 2*margin || lease%time.Second != 0 || lease > MaxOwnerLease {
		return fmt.Sprintf("the margin must be at least %v and the lease whole seconds, at least twice the margin and at most %v",
			MinOwnerMargin, MaxOwnerLease)
	}
	return ""
}

// WriteRequestTimeoutProblem returns why d cannot be WithWriteRequestTimeout's, or "" when it
// can: more than 0 and at most MaxWriteRequestTimeout. guard.WithWriteRequestTimeout checks with
// it too.
func WriteRequestTimeoutProblem(d time.Duration) string {
	if d <= 0 || d > MaxWriteRequestTimeout {
		return fmt.Sprintf("must be more than 0 and at most %v", MaxWriteRequestTimeout)
	}
	return ""
}
