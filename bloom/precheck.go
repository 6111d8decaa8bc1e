package bloom

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/internal/enumname"
	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// State is where a PreCheck is in its ownership cycle.
type State uint8

const (
	// Cold: the scope is not owned, or its warm-up failed. Every answer is NotWarm.
	Cold State = iota
	// Warming: the filter is loading the scope's keys. Every answer is NotWarm, but checked
	// keys are recorded, because the warm-up may already have read past them.
	Warming
	// Warm: the filter holds every key of the scope within the retention, so a key it has not
	// seen is new.
	Warm
)

// String returns the name used in messages and stats.
func (s State) String() string { return enumname.Of(s, "State", "cold", "warming", "warm") }

// Verdict is a PreCheck's answer about one key.
type Verdict uint8

const (
	// NotWarm: the PreCheck is not warm. Take the LWT path.
	NotWarm Verdict = iota
	// MaybeSeen: the filter may have seen the key. Take the LWT path; if the table then says
	// the key was new, report it with Observe: that was a false positive.
	MaybeSeen
	// ClearlyNew: the filter, warm for the scope, never saw the key, and this caller is the only
	// one to be told so. The fast path (a plain write that records the key) is safe only while
	// the caller still owns the scope at Answer.Epoch.
	ClearlyNew
)

// String returns the name used in messages and stats.
func (v Verdict) String() string {
	return enumname.Of(v, "Verdict", "not warm", "maybe seen", "clearly new")
}

// Answer is the result of PreCheck.Check.
type Answer struct {
	Verdict Verdict
	// Epoch is the ownership epoch the answer was given under. A fast-path write carries it so
	// that a write from an owner that has since lost the scope can be detected.
	Epoch uint64
}

// ClearlyNew reports whether the fast path may be taken.
func (a Answer) ClearlyNew() bool { return a.Verdict == ClearlyNew }

// PreCheck answers, for one ownership scope (a consumer group's partition, a namespace behind a
// sticky router), whether a key is clearly new. It is cold until WarmUp has loaded the scope's
// keys for an ownership epoch, and goes cold again on Invalidate. All methods are safe for
// concurrent use.
type PreCheck struct {
	scope string
	f     *Rotating
	limit uint64

	// word packs epoch<<2 | state, so Check reads both in one load and notices any change.
	word atomic.Uint64
	mu   sync.Mutex // serialises WarmUp and Invalidate

	counters []counters // striped by shard, so parallel Checks do not share a cache line
	warm     warmStats  // guarded by mu
}

// NewPreCheck returns a cold PreCheck for scope, a non-empty name for what this process owns
// (for example "orders-group/orders/17"). It accepts the options of NewRotating and WithWarmUpLimit.
func NewPreCheck(scope string, opts ...PreCheckOption) (*PreCheck, error) {
	if scope == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidScope)
	}
	cfg, err := newConfig(optcheck.Unwrap(opts, PreCheckOption.preCheckOption))
	if err != nil {
		return nil, err
	}
	f, err := newRotating(&cfg)
	if err != nil {
		return nil, err
	}
	return &PreCheck{
		scope:    scope,
		f:        f,
		limit:    cfg.warmUpLimit,
		counters: make([]counters, len(f.c.shards)),
	}, nil
}

func pack(epoch uint64, s State) uint64 { return epoch<<2 | uint64(s) }

func unpack(w uint64) (uint64, State) { return w >> 2, State(w & 3) }

// Retention is the horizon the PreCheck vouches for: a key it admitted or loaded is remembered
// at least this long (WithRetention). lwt.Store.Own reads it to decide which operations the
// pre-check may answer.
func (p *PreCheck) Retention() time.Duration { return p.f.Retention() }

// Scope is the ownership scope the PreCheck was built for.
func (p *PreCheck) Scope() string { return p.scope }

// State reports the current state and ownership epoch.
func (p *PreCheck) State() (State, uint64) {
	e, s := unpack(p.word.Load())
	return s, e
}

// Owns reports whether the PreCheck is warm at epoch: the fencing check a caller makes before
// acting on an Answer it has held for a while.
func (p *PreCheck) Owns(epoch uint64) bool { return p.word.Load() == pack(epoch, Warm) }

// Check answers whether key is clearly new and records it, atomically: of several goroutines
// checking the same key, at most one is told ClearlyNew. A key that is told ClearlyNew must then
// be written (or the work abandoned) — the filter remembers it either way, which is safe: a
// remembered key only sends a later attempt to the LWT path.
func (p *PreCheck) Check(key string) Answer {
	clearlyNew, maybeSeen, epoch := p.Admit(key)
	switch {
	case clearlyNew:
		return Answer{Verdict: ClearlyNew, Epoch: epoch}
	case maybeSeen:
		return Answer{Verdict: MaybeSeen, Epoch: epoch}
	}
	return Answer{Verdict: NotWarm, Epoch: epoch}
}

// Admit is Check in plain types, for callers that do not import this package (lwt.PreCheck):
// clearlyNew and maybeSeen are the ClearlyNew and MaybeSeen verdicts; neither is NotWarm.
func (p *PreCheck) Admit(key string) (clearlyNew, maybeSeen bool, epoch uint64) {
	w := p.word.Load()
	epoch, st := unpack(w)
	if st == Cold {
		// Nothing to record: WarmUp starts from an empty filter.
		p.counters[0].notWarm.Add(1)
		return false, false, epoch
	}
	seen, stripe := p.f.c.testOrAdd(key)
	c := &p.counters[stripe]
	if st != Warm || p.word.Load() != w {
		// Warming, or ownership changed while we looked: recorded, but not an answer to act on.
		c.notWarm.Add(1)
		return false, false, epoch
	}
	if seen {
		c.maybeSeen.Add(1)
		return false, true, epoch
	}
	c.clearlyNew.Add(1)
	return true, false, epoch
}

// Observe reports what the table said about a key that took the LWT path: tableSaidNew is
// true when the conditional write applied. For a MaybeSeen answer that is an observed false
// positive; other answers are ignored.
func (p *PreCheck) Observe(a Answer, tableSaidNew bool) {
	if a.Verdict == MaybeSeen {
		p.ObserveMaybeSeen(tableSaidNew)
	}
}

// ObserveMaybeSeen is Observe for an answer that was MaybeSeen.
func (p *PreCheck) ObserveMaybeSeen(tableSaidNew bool) {
	c := &p.counters[0]
	c.observed.Add(1)
	if tableSaidNew {
		c.falsePositives.Add(1)
	}
}

// Invalidate makes the PreCheck cold at once: call it as soon as ownership of the scope is lost
// or in doubt. A warm-up in progress fails with ErrOwnershipChanged.
func (p *PreCheck) Invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	epoch, _ := unpack(p.word.Load())
	p.word.Store(pack(epoch, Cold))
}

// Filter is the PreCheck's filter, for its fill, false-positive estimate and memory.
func (p *PreCheck) Filter() *Rotating { return p.f }

// padded to a cache line, so stripes used by different goroutines do not false-share.
type counters struct {
	clearlyNew, maybeSeen, notWarm atomic.Uint64
	observed, falsePositives       atomic.Uint64
	_                              [24]byte
}

type warmStats struct {
	warmUps, keys, skipped uint64
	duration               time.Duration
}
