package events

import (
	"sync/atomic"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/lwt"
)

// GuardStats is a snapshot of a guard's counters since it was created.
type GuardStats struct {
	// FastPath is the deliveries that ran the handler without a claim, and FastPathFailed those
	// of them whose handler failed (nothing was written; a redelivery takes the LWT path).
	FastPath, FastPathFailed uint64
	// LWTPath is the deliveries of owned scopes that took the LWT path: the pre-check said
	// maybe seen, or was not warm. Deliveries of scopes not owned are not counted here.
	LWTPath uint64
	// FalsePositives is the LWT-path deliveries whose pre-check said maybe seen and whose
	// record did not exist: filter false positives, plus redeliveries of a failed fast path.
	FalsePositives uint64
	// StaleEpoch is the fast paths that found, when the handler returned, that ownership had
	// moved, and recorded the message with a conditional write; StaleConflicts is those of them
	// that found a record already there: the handler ran in two places.
	StaleEpoch, StaleConflicts uint64
	// InFlight is the deliveries answered InProgress because this guard was processing the id.
	InFlight uint64
	// Store is the LWT path's counters.
	Store lwt.Stats
	// PreChecks holds, per owned scope whose pre-check reports them (a *bloom.PreCheck does),
	// the pre-check's own counters: checks, answers, warm-up size and time.
	PreChecks map[Scope]bloom.Stats
}

type guardCounters struct {
	fastPath, fastFailed, lwtPath, falsePositives, staleEpoch, staleConflicts, inFlight atomic.Uint64
}

// Stats returns a snapshot of the guard's counters. It reads every owned pre-check's filter, so
// call it for reporting, not per message.
func (g *Guard) Stats() GuardStats {
	c := &g.stats
	s := GuardStats{
		FastPath: c.fastPath.Load(), FastPathFailed: c.fastFailed.Load(), LWTPath: c.lwtPath.Load(),
		FalsePositives: c.falsePositives.Load(), StaleEpoch: c.staleEpoch.Load(),
		StaleConflicts: c.staleConflicts.Load(), InFlight: c.inFlight.Load(),
		Store: g.store.Stats(), PreChecks: map[Scope]bloom.Stats{},
	}
	g.mu.Lock()
	owned := make(map[Scope]PreCheck, len(g.owned))
	for sc, o := range g.owned {
		owned[sc] = o.pre
	}
	g.mu.Unlock()
	for sc, p := range owned {
		if r, ok := p.(interface{ Stats() bloom.Stats }); ok {
			s.PreChecks[sc] = r.Stats()
		}
	}
	return s
}
