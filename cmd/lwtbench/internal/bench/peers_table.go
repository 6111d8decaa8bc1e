package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// peerComparisons pair each of the toolkit's operations with the peers' operations that do the
// same thing, for the table's "ours against theirs" lines.
var peerComparisons = []struct {
	label, ours string
	theirs      []string
}{
	{"plain write", Baseline, []string{"pg-insert", ServerRedisAlways + "-set", ServerRedisEverysec + "-set"}},
	{"exactly once, new key", "once-new", []string{"pg-once-new", ServerRedisAlways + "-once-new", ServerRedisEverysec + "-once-new"}},
	{"exactly once, duplicate", "once-dup-node", []string{"pg-once-dup", ServerRedisAlways + "-once-dup", ServerRedisEverysec + "-once-dup"}},
	{"outbox producer, exactly once", "once-new-outbox", []string{"pg-once-outbox", "pg-outbox"}},
}

// WritePeersTable renders a -peers report: the servers with their durability and replication,
// then per concurrency level every operation's latency, the rate it sustains alone, its ratios
// to its own store's plain write, and the toolkit's operations against the peers'.
func WritePeersTable(w io.Writer, r *Report) error {
	fmt.Fprintln(w, "servers (each measured alone in its phases):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range r.Stores {
		fmt.Fprintf(tw, "  %s\t%s %s\t%s\t%s\t\n", s.Server, s.Store, s.Version, s.Durability, s.Replication)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := r.Client
	fmt.Fprintf(w, "client: %s (Cassandra: %s session, consistency %s, serial %s); Postgres: pgx pool, prepared statements; "+
		"Redis: go-redis pool; timeout %s, no retries\n", c.Driver, c.Session, c.Consistency, c.Serial, c.RequestTimeout)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "\n%s, latency from %s\n", p.Label(), p.LatencyFrom)
		tw, width := opTable(w, p.Operations)
		fmt.Fprintf(tw, "%-*s\tok\treq/s\tp50\tp90\tp99\tp99.9\tmax\tp50 ×\tp99 ×\terrors\ttimeouts\t\n", width, "op")
		for _, s := range p.Operations {
			fmt.Fprintf(tw, "%-*s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
				width, s.Op, s.Requests, s.MessagesPerS, ms(s.P50Ms), ms(s.P90Ms), ms(s.P99Ms), ms(s.P999Ms),
				ms(s.MaxMs), ratio(s.RatioP50), ratio(s.RatioP99), s.Errors, s.Timeouts)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, s := range p.Operations {
			if s.FirstError != "" {
				fmt.Fprintf(w, "  %s, first failure: %s\n", s.Op, oneLine(s.FirstError))
			}
		}
		writeComparisons(w, p)
	}
	fmt.Fprintln(w, "\nlatencies in ms, per request; req/s is what the op sustains alone at that concurrency (workers / mean latency); "+
		"× is the ratio to the plain write of the op's own store (insert, pg-insert, redis-*-set) in the same phase; "+
		"ours/theirs: the toolkit's op over the peer's at the same concurrency")
	return nil
}

func writeComparisons(w io.Writer, p PhaseResult) {
	byOp := map[string]Summary{}
	for _, s := range p.Operations {
		byOp[s.Op] = s
	}
	for _, cmp := range peerComparisons {
		ours, ok := byOp[cmp.ours]
		if !ok || ours.Requests == 0 {
			continue
		}
		line := ""
		for _, t := range cmp.theirs {
			theirs, ok := byOp[t]
			if !ok || theirs.Requests == 0 {
				continue
			}
			line += fmt.Sprintf("; %s p50 ×%s, req/s ×%s", t, ratio(ours.P50Ms/theirs.P50Ms), ratio(ours.MessagesPerS/theirs.MessagesPerS))
		}
		if line != "" {
			fmt.Fprintf(w, "  ours/theirs, %s (%s)%s\n", cmp.label, cmp.ours, line)
		}
	}
}
