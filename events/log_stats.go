package events

import (
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// LogStats is a snapshot of a Log's counters since it was made.
type LogStats struct {
	// Writes is the writes of event rows the Log sent, each the rows queued for one partition
	// (see Record), and Rows the rows they carried: Rows / Writes is how many events a write
	// carried on average.
	Writes, Rows int64
	// IndexWrites is the window index rows the Log wrote (one per window, counter and Log that
	// wrote it) and Starts the conditional writes that gave a counter's rollup row its first
	// day (one per counter and Log, sent only when a read found it not started): with Writes and
	// LateRounds, every write an event cost.
	IndexWrites, Starts int64
	// Summed is the partitions whose sum the node computed for totals and rollups, Reused the
	// partition sums taken from the Log's cache instead (final, or checked unchanged by their
	// marks), and Checks the partitions whose marks were read for that. TotalSummed is the part
	// of Summed that totals summed (the rest, rollups'): TotalSummed / TotalReads is what a
	// total read.
	Summed, Reused, Checks, TotalSummed int64
	// Totals is the Total calls that returned a total, and TotalReads the reads made for them:
	// concurrent calls of one counter share reads, so TotalReads can be far fewer.
	Totals, TotalReads int64
	// LateEvents is the late events the Log claimed or followed a claim of (their window had
	// closed: a consumer behind its topic, a retry after a restart), and LateRounds the
	// conditional writes (Paxos rounds) it sent for them: a late batch claims the late events of
	// one counter and one second with one round, so LateRounds stays far below LateEvents. A rate
	// of LateEvents well above zero says writers fall behind their events. Expired is the events
	// refused with ErrEventExpired.
	LateEvents, LateRounds, Expired int64
	// RollupFailures is the Rollup calls (RunRollups' and RollupEvery's included) that returned
	// an error, Stalled those that found a rollup more than the maximum lag behind.
	RollupFailures, Stalled int64
	// Rollups is the Rollup calls (RunRollups' and RollupEvery's included), and TotalFolds the
	// folds that totals made of the closed windows they had summed (see Total).
	Rollups, TotalFolds int64
	// RollupLag is how far behind the clock the rollup of the counter furthest behind is, as this
	// Log knows it: the clock less the oldest window it wrote and has not seen folded (a fold of
	// its own, by Rollup, RunRollups or RollupEvery), or less the first failure of a counter it
	// rolls and has never folded. With rollups running it stays under about Lag(interval);
	// RollupLagCounter names the counter. It grows without bound when rollups stall: events not
	// folded within the retention expire uncounted.
	RollupLag        time.Duration
	RollupLagCounter string
	// Clock is the Log's offset from the cluster's clock, its bound, its age and the meter's
	// counts (Refusals: calls refused with ErrClockOffset). Zero under WithoutClockCheck.
	Clock clock.Reading
	// WidthReads is the reads of counters' window widths this Log's writers made (a writer reads
	// a counter's widths again every 20 s of event time unless a total or rollup of the same Log
	// read them), WidthSwitches the widths it added for counters whose traffic called for
	// another (see WithWindowWidths) and WidthFailures the additions that failed.
	WidthReads, WidthSwitches, WidthFailures int64
}

type logCounters struct {
	writes, rows, indexWrites, starts, summed, reused, checks, totalSummed  atomic.Int64
	totals, reads, lateEvents, lateRounds, expired, rollupFailures, stalled atomic.Int64
	rollups, totalFolds                                                     atomic.Int64
	widthReads, widthSwitches, widthFailures                                atomic.Int64
	serialReads                                                             atomic.Int64 // of rollup rows: a Paxos round each
}

// Stats returns a snapshot of the Log's counters.
func (l *Log) Stats() LogStats {
	if l == nil {
		return LogStats{}
	}
	c := &l.stats
	s := LogStats{Writes: c.writes.Load(), Rows: c.rows.Load(), IndexWrites: c.indexWrites.Load(), Starts: c.starts.Load(),
		Summed: c.summed.Load(), Reused: c.reused.Load(), Checks: c.checks.Load(), TotalSummed: c.totalSummed.Load(),
		Totals: c.totals.Load(), TotalReads: c.reads.Load(), Rollups: c.rollups.Load(), TotalFolds: c.totalFolds.Load(),
		LateEvents: c.lateEvents.Load(), LateRounds: c.lateRounds.Load(), Expired: c.expired.Load(),
		RollupFailures: c.rollupFailures.Load(), Stalled: c.stalled.Load(),
		WidthReads: c.widthReads.Load(), WidthSwitches: c.widthSwitches.Load(), WidthFailures: c.widthFailures.Load()}
	s.Clock = l.clock.Reading()
	if worst, ok := l.laggiest(l.cfg.Now()); ok {
		s.RollupLag, s.RollupLagCounter = worst.Lag, worst.Counter
	}
	return s
}
