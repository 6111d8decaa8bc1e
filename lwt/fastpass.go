package lwt

import (
	"context"
	"fmt"
	"time"
)

// Pass is one key's admission to the fast path, for callers that record many keys with one
// write of their own (package events' ProcessBatch) instead of one ExecuteOnce each. It holds
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
