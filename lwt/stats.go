package lwt

import (
	"sync/atomic"
	"time"
)

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
	// Owned scopes whose server lease renewal found them taken at a newer epoch: their fast
	// path stopped there.
	Superseded int64
	// Calls of an owned scope refused because its lease was not live (ErrNoLease).
	NoLease int64
	// Own calls refused because the scope's epoch went back (ErrEpochRegressed).
	EpochRegressed int64
	// Repeatable calls (WithRepeatableFunction) that met a run of their key in this process
	// and waited for it rather than running the function too (stores with a cache).
	Joined int64
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

	fastPath, fastFailed, fastLWT, falsePositives, staleEpoch, staleConflicts, inFlight, superseded, noLease, epochRegressed, joined atomic.Int64
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
		StaleConflicts: c.staleConflicts.Load(), InFlight: c.inFlight.Load(), Superseded: c.superseded.Load(), NoLease: c.noLease.Load(),
		EpochRegressed: c.epochRegressed.Load(), Joined: c.joined.Load(),
	}
}

func (c *counters) counter(k ObservationKind) *atomic.Int64 {
	switch k {
	case ObservedClaim:
		return &c.claims
	case ObservedTakeover:
		return &c.takeovers
	case ObservedReplay:
		return &c.replays
	case ObservedCacheHit:
		return &c.cacheHits
	case ObservedConflict:
		return &c.conflicts
	case ObservedKeyReuse:
		return &c.keyReuses
	case ObservedComplete:
		return &c.completions
	case ObservedFail:
		return &c.failures
	case ObservedRelease:
		return &c.releases
	case ObservedLeaseLost:
		return &c.leaseLost
	case ObservedOutcomeUnknown:
		return &c.unknown
	case ObservedOutcomeResolved:
		return &c.resolved
	}
	return nil
}

// record counts e and passes it to the observer.
func (s *Store) record(e Observation) {
	if e.Kind == ObservedLWT {
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

// Stats returns a snapshot of the store's counters; zero for a nil *Store.
func (s *Store) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return s.stats.snapshot()
}
