package observe

import (
	"time"

	"github.com/cassdedup/cassdedup/internal/enumname"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Key is the partition-key values of one record, bound in the order of the table's key columns
// (lwt.Table.KeyColumns). Supported types are string (non-empty, valid UTF-8, at most the store's
// key length limit) and int, int32 and int64.
type Key []any

// ObservationKind names what an Observation reports.
type ObservationKind int

// Observation kinds.
const (
	ObservedLWT             ObservationKind = iota + 1 // one conditional write or serial read; Op, Applied, Latency, Err set
	ObservedClaim                                      // a new claim of a key (first claim or re-claim)
	ObservedTakeover                                   // a claim whose lease had passed was taken over
	ObservedReplay                                     // a stored result was replayed from the node
	ObservedCacheHit                                   // a stored result was replayed from the in-process cache
	ObservedConflict                                   // a duplicate met a live claim (ErrInProgress)
	ObservedKeyReuse                                   // a key met a different fingerprint (ErrKeyReuse)
	ObservedComplete                                   // a result was stored
	ObservedFail                                       // a permanent failure was stored
	ObservedRelease                                    // a claim was released after a retryable failure
	ObservedLeaseLost                                  // a write was fenced off (ErrLeaseLost)
	ObservedOutcomeUnknown                             // an LWT outcome was unknown; Err is the driver's error
	ObservedOutcomeResolved                            // an unknown outcome was resolved by a serial read
	ObservedFastPath                                   // a call ran without a claim on the Bloom fast path
	ObservedWrite                                      // a plain (non-LWT) write; Op, Latency, Err set
	ObservedUnconfirmed                                // a counter increment was claimed but not confirmed
	ObservedSuperseded                                 // an owned scope's renewal found it taken (Stats.Superseded); Key is the scope
	ObservedNoLease                                    // a call of an owned scope was refused: its lease is not live (ErrNoLease)
	ObservedEpochRegressed                             // Own met an epoch that went back (ErrEpochRegressed); Key is the scope
)

var observationNames = [...]string{"", "lwt", "claim", "takeover", "replay", "cache-hit", "conflict",
	"key-reuse", "complete", "fail", "release", "lease-lost", "outcome-unknown", "outcome-resolved",
	"fast-path", "write", "unconfirmed", "superseded", "no-lease", "epoch-regressed"}

// String names the kind in lower case with dashes (for log fields and metric labels).
func (k ObservationKind) String() string {
	return enumname.Of(k, "ObservationKind", observationNames[:]...)
}

// Observation is what an Observer sees.
type Observation struct {
	Kind    ObservationKind
	Key     Key
	Op      string // for ObservedLWT and ObservedWrite: claim, takeover, renew, complete, fail, release, read, put, ...
	Applied bool   // for ObservedLWT
	Latency time.Duration
	Err     error
}

// Observer receives observations. Adapt it to a logger or metrics library in your own code;
// this package forces none on its importers. Observe is called synchronously on the caller's
// goroutine and must be fast and safe for concurrent use. Stores of packages events and
// counters take the same Observer.
type Observer interface {
	Observe(Observation)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Observation)

// Observe calls f(o).
func (f ObserverFunc) Observe(o Observation) { f(o) }

// Result names the outcome of an ObservedLWT or ObservedWrite observation, the same word in
// every log and metrics adapter: "error" when Err is set, else "applied" or "not_applied" for
// an LWT (a serial read is "applied" when it found a row) and "ok" for a plain write.
func (o Observation) Result() string {
	switch {
	case o.Err != nil:
		return "error"
	case o.Kind == ObservedWrite:
		return "ok"
	case o.Applied:
		return "applied"
	}
	return "not_applied"
}

// ObserveCAS adapts o to the Observe function of a cas.Conditional or cas.BatchConditional: each
// cas.Event becomes an Observation of key (an ObservedLWT, ObservedOutcomeUnknown or
// ObservedOutcomeResolved). It returns nil when o is nil, so nothing is reported.
func ObserveCAS(o Observer, key Key) func(cas.Event) {
	if o == nil {
		return nil
	}
	return func(e cas.Event) { o.Observe(FromEvent(e, key)) }
}

// observedKinds maps a cas.EventKind to the Observation kind that reports it.
var observedKinds = [...]ObservationKind{cas.Ran: ObservedLWT, cas.Unknown: ObservedOutcomeUnknown, cas.Resolved: ObservedOutcomeResolved}

// FromEvent is the Observation of key that reports e: an ObservedLWT, ObservedOutcomeUnknown or
// ObservedOutcomeResolved.
func FromEvent(e cas.Event, key Key) Observation {
	var kind ObservationKind
	if e.Kind > 0 && int(e.Kind) < len(observedKinds) {
		kind = observedKinds[e.Kind]
	}
	return Observation{Kind: kind, Key: key, Op: e.Op, Applied: e.Applied, Latency: e.Latency, Err: e.Err}
}
