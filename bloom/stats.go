package bloom

import "time"

// Stats is a snapshot of a PreCheck's counters since it was built.
type Stats struct {
	Scope string
	State State
	Epoch uint64

	// Checks is ClearlyNew + MaybeSeen + NotWarm: every call to Check.
	Checks     uint64
	ClearlyNew uint64 // answers that allowed the fast path
	MaybeSeen  uint64 // warm answers that sent the key to the LWT path
	NotWarm    uint64 // answers given while cold or warming

	// Observed is the MaybeSeen answers reported through Observe, and FalsePositives those of
	// them the table said were new: FalsePositives/Observed is the measured false-positive rate.
	Observed       uint64
	FalsePositives uint64

	WarmUps        uint64        // successful warm-ups
	WarmUpKeys     uint64        // keys loaded by the last successful warm-up
	WarmUpSkipped  uint64        // keys it skipped as older than the retention
	WarmUpDuration time.Duration // how long it took

	Fill                       float64 // of the filter's bits, over all generations
	EstimatedFalsePositiveRate float64 // from the bits set
	MemoryBytes                int64   // of the filter's bit arrays
}

// Stats returns a snapshot. It reads every shard of the filter, so call it for reporting, not
// per operation.
func (p *PreCheck) Stats() Stats {
	st, epoch := p.State()
	s := Stats{Scope: p.scope, State: st, Epoch: epoch, MemoryBytes: p.f.MemoryBytes()}
	for i := range p.counters {
		c := &p.counters[i]
		s.ClearlyNew += c.clearlyNew.Load()
		s.MaybeSeen += c.maybeSeen.Load()
		s.NotWarm += c.notWarm.Load()
		s.Observed += c.observed.Load()
		s.FalsePositives += c.falsePositives.Load()
	}
	s.Checks = s.ClearlyNew + s.MaybeSeen + s.NotWarm
	p.mu.Lock()
	w := p.warm
	p.mu.Unlock()
	s.WarmUps, s.WarmUpKeys, s.WarmUpSkipped, s.WarmUpDuration = w.warmUps, w.keys, w.skipped, w.duration
	s.Fill, s.EstimatedFalsePositiveRate = p.f.c.occupancy()
	return s
}
