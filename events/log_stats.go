package events

import "sync/atomic"

// LogStats is a snapshot of a Log's counters since it was made.
type LogStats struct {
	// Writes is the writes of event rows the Log sent, each the rows queued for one partition
	// (see Record), and Rows the rows they carried: Rows / Writes is how many events a write
	// carried on average.
	Writes, Rows int64
	// Summed is the partitions whose sum the node computed for totals and rollups, Reused the
	// partition sums taken from the Log's cache instead (final, or checked unchanged by their
	// marks), and Checks the queries that read marks.
	Summed, Reused, Checks int64
	// Totals is the Total calls that returned a total, and TotalReads the reads made for them:
	// concurrent calls of one counter share reads, so TotalReads can be far fewer.
	Totals, TotalReads int64
	// LateEvents is the late events the Log claimed or followed a claim of, and LateRounds the
	// conditional writes (Paxos rounds) it sent for them: a late batch claims the late events of
	// one counter and one second with one round, so LateRounds stays far below LateEvents.
	LateEvents, LateRounds int64
}

type logCounters struct {
	writes, rows, summed, reused, checks, totals, reads, lateEvents, lateRounds atomic.Int64
}

// Stats returns a snapshot of the Log's counters.
func (l *Log) Stats() LogStats {
	if l == nil {
		return LogStats{}
	}
	c := &l.stats
	return LogStats{Writes: c.writes.Load(), Rows: c.rows.Load(), Summed: c.summed.Load(), Reused: c.reused.Load(),
		Checks: c.checks.Load(), Totals: c.totals.Load(), TotalReads: c.reads.Load(),
		LateEvents: c.lateEvents.Load(), LateRounds: c.lateRounds.Load()}
}
