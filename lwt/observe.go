package lwt

import (
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// The observation port lives in package observe, below this package, so that the stores that
// report to the same Observer (events, counters) need not import the state machine. These
// aliases keep every name where users have always found it.

// ObservationKind names what an Observation reports.
type ObservationKind = observe.ObservationKind

// Observation kinds.
const (
	ObservedLWT             = observe.ObservedLWT             // one conditional write or serial read; Op, Applied, Latency, Err set
	ObservedClaim           = observe.ObservedClaim           // a new claim of a key (first claim or re-claim)
	ObservedTakeover        = observe.ObservedTakeover        // a claim whose lease had passed was taken over
	ObservedReplay          = observe.ObservedReplay          // a stored result was replayed from the node
	ObservedCacheHit        = observe.ObservedCacheHit        // a stored result was replayed from the in-process cache
	ObservedConflict        = observe.ObservedConflict        // a duplicate met a live claim (ErrInProgress)
	ObservedKeyReuse        = observe.ObservedKeyReuse        // a key met a different fingerprint (ErrKeyReuse)
	ObservedComplete        = observe.ObservedComplete        // a result was stored
	ObservedFail            = observe.ObservedFail            // a permanent failure was stored
	ObservedRelease         = observe.ObservedRelease         // a claim was released after a retryable failure
	ObservedLeaseLost       = observe.ObservedLeaseLost       // a write was fenced off (ErrLeaseLost)
	ObservedOutcomeUnknown  = observe.ObservedOutcomeUnknown  // an LWT outcome was unknown; Err is the driver's error
	ObservedOutcomeResolved = observe.ObservedOutcomeResolved // an unknown outcome was resolved by a serial read
	ObservedFastPath        = observe.ObservedFastPath        // a call ran without a claim on the Bloom fast path
	ObservedWrite           = observe.ObservedWrite           // a plain (non-LWT) write; Op, Latency, Err set
	ObservedUnconfirmed     = observe.ObservedUnconfirmed     // a counter increment was claimed but not confirmed
	ObservedSuperseded      = observe.ObservedSuperseded      // an owned scope's renewal found it taken (Stats.Superseded); Key is the scope
	ObservedNoLease         = observe.ObservedNoLease         // a call of an owned scope was refused: its lease is not live (ErrNoLease)
	ObservedEpochRegressed  = observe.ObservedEpochRegressed  // Own met an epoch that went back (ErrEpochRegressed); Key is the scope
)

// Observation is what an Observer sees.
type Observation = observe.Observation

// Observer receives observations. Adapt it to a logger or metrics library in your own code;
// this package forces none on its importers. Observe is called synchronously on the caller's
// goroutine and must be fast and safe for concurrent use. Stores of packages events and
// counters take the same Observer.
type Observer = observe.Observer

// ObserverFunc adapts a function to Observer.
type ObserverFunc = observe.ObserverFunc

// ObserveCAS adapts o to the Observe function of a cas.Conditional or cas.BatchConditional: each
// cas.Event becomes an Observation of key (an ObservedLWT, ObservedOutcomeUnknown or
// ObservedOutcomeResolved). It returns nil when o is nil, so nothing is reported.
func ObserveCAS(o Observer, key Key) func(cas.Event) { return observe.ObserveCAS(o, key) }
