package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable renders the report for a terminal: the configuration, then one table per phase
// with each operation's latency percentiles in milliseconds, its ratios to the baseline, and its
// failures. Failures are never folded into the percentiles, so they have their own columns.
func WriteTable(w io.Writer, r *Report) error {
	n, c := r.Node, r.Client
	fmt.Fprintf(w, "Cassandra %s, paxos %s (state purging %s), commitlog %s %s, %s, %d node(s)\n",
		n.CassandraVersion, n.PaxosVariant, n.PaxosStatePurging, n.CommitlogSync,
		commitlogWindow(n), n.Replication, n.Nodes)
	if n.SkipSync {
		fmt.Fprintln(w, "WARNING: the node runs with cassandra.skip_sync=true (commitlog never fsynced): not durable, not a benchmark")
	}
	fmt.Fprintf(w, "client: %s, %s session (%s, write coalescing %s), consistency %s, serial %s, timeout %s, no driver retries, keyspace %s\n",
		c.Driver, c.Session, c.HostPolicy, c.WriteCoalesce, c.Consistency, c.Serial, c.RequestTimeout, r.Keyspace)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "\n%s: %.0f req/s over %.1fs, latency from %s\n", p.Label(), p.Throughput, p.ElapsedS, p.LatencyFrom)
		tw, width := opTable(w, p.Operations)
		fmt.Fprintf(tw, "%-*s\tok\treq/s\tmsg/s\tp50\tp90\tp99\tp99.9\tmax\tp50 ×\tp99 ×\terrors\ttimeouts\tunsent\t\n", width, "op")
		for _, s := range p.Operations {
			fmt.Fprintf(tw, "%-*s\t%d\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n",
				width, s.Op, s.Requests, s.Throughput, s.MessagesPerS, ms(s.P50Ms), ms(s.P90Ms), ms(s.P99Ms), ms(s.P999Ms),
				ms(s.MaxMs), ratio(s.RatioP50), ratio(s.RatioP99), s.Errors, s.Timeouts, s.Unsent)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, s := range p.Operations {
			if s.FirstError != "" {
				fmt.Fprintf(w, "  %s, first failure: %s\n", s.Op, oneLine(s.FirstError))
			}
		}
	}
	for _, hc := range r.HotCounter {
		fmt.Fprintf(w, "\n%s: %.0f events/s acknowledged (%d, %d unconfirmed), total p50 %s p99 %s over %d reads, exact %t (%d of %d counters wrong)\n",
			hc.Name, hc.EventsPerS, hc.Events, hc.Unconfirmed, ms(hc.TotalP50Ms), ms(hc.TotalP99Ms), hc.TotalReads, hc.TotalExact,
			hc.CountersWrong, hc.CountersChecked)
		fmt.Fprintf(w, "  largest event partition %d rows (projected to 10k events/s: %.0f), largest index partition %d rows (projected to 1 h: %.0f); windows %s (hot / default / cold), %d width switches, %.3f width reads per event, %d parts, grace %s, settle %s, rollups every %s, lag %s\n",
			hc.MaxPartitionRows, hc.MaxPartitionRowsProjected1h10k, hc.MaxIndexRows, hc.MaxIndexRowsProjected1h,
			hc.Widths, hc.WidthSwitches, hc.WidthReadsPerEvent, hc.Parts, hc.Grace, hc.Settle, hc.RollupEvery, hc.Lag)
		fmt.Fprintf(w, "  one plain read of one row beside them: p50 %s p99 %s over %d reads; of the writes per event, %.3f index rows, %.3f starts, %.3f late claims\n",
			ms(hc.ProbeP50Ms), ms(hc.ProbeP99Ms), hc.ProbeReads, hc.IndexWritesPerEvent, hc.StartsPerEvent, hc.LateRoundsPerEvent)
		fmt.Fprintf(w, "  %.1f events per write, %.2f writes per event; per total, %.1f partitions summed by the node for the total (%.1f more by rollups) and %.1f reused from the Log's cache (rollups included); %d rollups, %d folds by totals; warm-up %.0fs, its closed windows folded in %.0fs\n",
			hc.RowsPerWrite, hc.WritesPerEvent, hc.PartsSummedPerTotal, hc.PartsSummedByRollupsPerTotal, hc.PartsReusedPerTotal,
			hc.Rollups, hc.TotalFolds, hc.WarmupS, hc.WarmupFoldS)
		if hc.FirstError != "" {
			fmt.Fprintf(w, "  first failure: %s\n", oneLine(hc.FirstError))
		}
	}
	fmt.Fprintf(w, "\nlatencies in ms, per request; msg/s is messages (rows) per second of the workers' time spent on the op (closed loop: what it sustains alone at that concurrency); × is the ratio to %s in the same phase\n", r.Baseline)
	return nil
}

func commitlogWindow(n NodeConfig) string {
	if n.CommitlogSync == "group" {
		return n.CommitlogGroupWindow
	}
	return n.CommitlogSyncPeriod
}

// ms formats a latency to about three significant digits; below 0.1 ms (a cache hit) to the
// microsecond, the histogram's resolution.
func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 0.1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio formats a ratio to the baseline; a small one (an in-process answer against a round
// trip) keeps a third decimal, or shows its bound, rather than reading as zero.
func ratio(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 0.001:
		return "<0.001"
	case v < 0.1:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// opTable starts a phase's table of operations: numbers align right, and names are padded to
// the returned width so they read left-aligned.
func opTable(w io.Writer, ops []Summary) (*tabwriter.Writer, int) {
	width := len("op")
	for _, s := range ops {
		width = max(width, len(s.Op))
	}
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight), width
}
