package lwt

import (
	"sync/atomic"
	"time"
)

// EventKind names what an Event reports.
type EventKind int

// Event kinds.
const (
	EventLWT             EventKind = iota + 1 // one conditional write or serial read; Op, Applied, Latency, Err set
	EventClaim                                // a new claim of a key (first claim or re-claim)
	EventTakeover                             // a claim whose lease had passed was taken over
	EventReplay                               // a stored result was replayed from the node
	EventCacheHit                             // a stored result was replayed from the in-process cache
	EventConflict                             // a duplicate met a live claim (ErrInProgress)
	EventKeyReuse                             // a key met a different fingerprint (ErrKeyReuse)
	EventComplete                             // a result was stored
	EventFail                                 // a permanent failure was stored
	EventRelease                              // a claim was released after a retryable failure
	EventLeaseLost                            // a write was fenced off (ErrLeaseLost)
	EventOutcomeUnknown                       // an LWT outcome was unknown; Err is the driver's error
	EventOutcomeResolved                      // an unknown outcome was resolved by a serial read
)

// Event is what an Observer sees.
type Event struct {
	Kind    EventKind
	Key     Key
	Op      string // for EventLWT: claim, takeover, renew, complete, fail, release, read
	Applied bool   // for EventLWT
	Latency time.Duration
	Err     error
}

// Observer receives events. Adapt it to a logger or metrics library in your own code; this
// package forces none on its importers. Observe is called synchronously on the caller's
// goroutine and must be fast and safe for concurrent use.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// Stats is a snapshot of a store's counters since it was created.
type Stats struct {
	Claims           int64 // keys claimed (takeovers included)
	Takeovers        int64 // claims taken over from an expired lease
	Replays          int64 // stored results replayed from the node
	CacheHits        int64 // stored results replayed from the cache
	Conflicts        int64 // duplicates that met a live claim
	KeyReuses        int64 // keys met with another fingerprint
	Completions      int64
	Failures         int64 // permanent failures stored
	Releases         int64
	LeaseLost        int64
	UnknownOutcomes  int64 // LWTs whose outcome the driver could not report
	ResolvedOutcomes int64 // of those, resolved by a serial read
	LWTs             int64 // conditional writes and serial reads sent
	LWTRejected      int64 // conditional writes that did not apply
	LWTLatencyTotal  time.Duration
	LWTLatencyMax    time.Duration

	// The fast path (Own): calls that ran fn without a claim, and those whose fn failed
	// (nothing was written); calls of owned namespaces that took the LWT path; of those, the
	// ones whose pre-check said maybe seen and whose record did not exist (false positives,
	// failed fast paths included); fast paths that found ownership moved when fn returned and
	// wrote conditionally, and those of them that found a record (fn ran twice); calls answered
	// ErrInProgress because the key was running in this process.
	FastPath, FastPathFailed, FastPathLWT, FalsePositives int64
	StaleEpoch, StaleConflicts, InFlight                  int64
}

// LWTLatencyMean is the mean latency of the LWTs counted.
func (s Stats) LWTLatencyMean() time.Duration {
	if s.LWTs == 0 {
		return 0
	}
	return s.LWTLatencyTotal / time.Duration(s.LWTs)
}

type counters struct {
	claims, takeovers, replays, cacheHits, conflicts, keyReuses, completions, failures, releases,
	leaseLost, unknown, resolved, lwts, rejected, latTotal, latMax atomic.Int64

	fastPath, fastFailed, fastLWT, falsePositives, staleEpoch, staleConflicts, inFlight atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Claims: c.claims.Load(), Takeovers: c.takeovers.Load(), Replays: c.replays.Load(),
		CacheHits: c.cacheHits.Load(), Conflicts: c.conflicts.Load(), KeyReuses: c.keyReuses.Load(),
		Completions: c.completions.Load(), Failures: c.failures.Load(), Releases: c.releases.Load(),
		LeaseLost: c.leaseLost.Load(), UnknownOutcomes: c.unknown.Load(), ResolvedOutcomes: c.resolved.Load(),
		LWTs: c.lwts.Load(), LWTRejected: c.rejected.Load(),
		LWTLatencyTotal: time.Duration(c.latTotal.Load()), LWTLatencyMax: time.Duration(c.latMax.Load()),
		FastPath: c.fastPath.Load(), FastPathFailed: c.fastFailed.Load(), FastPathLWT: c.fastLWT.Load(),
		FalsePositives: c.falsePositives.Load(), StaleEpoch: c.staleEpoch.Load(),
		StaleConflicts: c.staleConflicts.Load(), InFlight: c.inFlight.Load(),
	}
}

func (c *counters) counter(k EventKind) *atomic.Int64 {
	switch k {
	case EventClaim:
		return &c.claims
	case EventTakeover:
		return &c.takeovers
	case EventReplay:
		return &c.replays
	case EventCacheHit:
		return &c.cacheHits
	case EventConflict:
		return &c.conflicts
	case EventKeyReuse:
		return &c.keyReuses
	case EventComplete:
		return &c.completions
	case EventFail:
		return &c.failures
	case EventRelease:
		return &c.releases
	case EventLeaseLost:
		return &c.leaseLost
	case EventOutcomeUnknown:
		return &c.unknown
	case EventOutcomeResolved:
		return &c.resolved
	}
	return nil
}

// record counts e and passes it to the observer.
func (s *Store) record(e Event) {
	if e.Kind == EventLWT {
		s.stats.lwts.Add(1)
		if e.Err == nil && !e.Applied && e.Op != "read" {
			s.stats.rejected.Add(1)
		}
		s.stats.latTotal.Add(int64(e.Latency))
		for {
			old := s.stats.latMax.Load()
			if int64(e.Latency) <= old || s.stats.latMax.CompareAndSwap(old, int64(e.Latency)) {
				break
			}
		}
	} else if c := s.stats.counter(e.Kind); c != nil {
		c.Add(1)
	}
	if s.cfg.observer != nil {
		s.cfg.observer.Observe(e)
	}
}

// Stats returns a snapshot of the store's counters.
func (s *Store) Stats() Stats { return s.stats.snapshot() }
