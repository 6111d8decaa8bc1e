package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cassdedup/cassdedup/cmd/lwtbench/internal/peers"
)

// A -peers run measures the toolkit's operations beside Postgres's and Redis's, as the engineer
// choosing between them would: each store on its own server, tuned as its experts tune it, and
// each server measured alone. Every concurrency level runs one closed-loop phase per server
// (the servers in a rotating order, so drift does not always favour the same one) in which that
// server's operations are interleaved as in any run; ratios are taken against the plain write
// of the operation's own store. The phases of one level are reported together as one.

// StoreInfo describes a server of a -peers run, for every row measured on it.
type StoreInfo struct {
	Server      string `json:"server"` // ServerCassandra, ServerPostgres, ...
	Store       string `json:"store"`  // cassandra, postgres, redis
	Version     string `json:"version"`
	Durability  string `json:"durability"`
	Replication string `json:"replication"`
}

// Entry is one (store, operation, workers) row of a -peers run.
type Entry struct {
	Store       string  `json:"store"`
	Server      string  `json:"server"`
	Operation   string  `json:"operation"`
	Workers     int     `json:"workers"`
	Durability  string  `json:"durability"`
	Replication string  `json:"replication"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	Timeouts    int64   `json:"timeouts"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	// ReqPerS is what the operation sustains alone at this concurrency: workers / mean latency
	// (its workers share their time with the server's other operations; see messageRate).
	ReqPerS float64 `json:"req_per_s"`
	// Baseline is the plain write of the same store; the ratios are this row's over its row.
	Baseline string  `json:"baseline"`
	RatioP50 float64 `json:"ratio_p50,omitempty"`
	RatioP99 float64 `json:"ratio_p99,omitempty"`
}

// checkPeerServers refuses a run whose operations need a server it was not given.
func (c *Config) checkPeerServers(catalog []Spec) error {
	need := map[string]string{ServerPostgres: c.PostgresURL, ServerRedisAlways: c.RedisAlways, ServerRedisEverysec: c.RedisEverysec}
	flags := map[string]string{ServerPostgres: "-postgres", ServerRedisAlways: "-redis-always", ServerRedisEverysec: "-redis-everysec"}
	for _, s := range catalog {
		if s.Server != "" && slices.Contains(c.Ops, s.Name) && strings.TrimSpace(need[s.Server]) == "" {
			return usageErrorf("operation %s needs %s (or -ops without it)", s.Name, flags[s.Server])
		}
	}
	return nil
}

// peerServers returns the servers of the selected operations, Cassandra first, in catalog order.
func peerServers(ops []string, catalog []Spec) []string {
	var out []string
	for _, s := range catalog {
		srv := cmp(s.Server, ServerCassandra)
		if slices.Contains(ops, s.Name) && !slices.Contains(out, srv) {
			out = append(out, srv)
		}
	}
	return out
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// connectPeers opens the peer servers the run's operations need, sized for its workers, and
// describes them. close releases whatever was opened, the Postgres schema included.
func connectPeers(ctx context.Context, c Config, servers []string, runID string, conns int) (PeerStores, []StoreInfo, func(), error) {
	var (
		ps      = PeerStores{Redis: map[string]*peers.Redis{}}
		infos   []StoreInfo
		closers []func()
	)
	closeAll := func() {
		for _, f := range slices.Backward(closers) {
			f()
		}
	}
	for _, srv := range servers {
		var (
			info peers.Server
			err  error
		)
		switch srv {
		case ServerPostgres:
			ps.Postgres, err = peers.OpenPostgres(ctx, c.PostgresURL, "lwtbench_"+runID, conns)
			if err != nil {
				closeAll()
				return ps, nil, nil, fmt.Errorf("postgres: %w", err)
			}
			pg := ps.Postgres
			closers = append(closers, func() {
				dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_ = pg.DropSchema(dctx)
				pg.Close()
			})
			info, err = pg.Probe(ctx)
		case ServerRedisAlways, ServerRedisEverysec:
			addr := map[string]string{ServerRedisAlways: c.RedisAlways, ServerRedisEverysec: c.RedisEverysec}[srv]
			rd, oerr := peers.OpenRedis(ctx, addr, conns, c.RequestTimeout)
			if oerr != nil {
				closeAll()
				return ps, nil, nil, fmt.Errorf("%s: %w", srv, oerr)
			}
			ps.Redis[srv] = rd
			closers = append(closers, func() { _ = rd.Close() })
			if info, err = rd.Probe(ctx); err == nil {
				err = checkRedisDurability(srv, info)
			}
		default:
			continue
		}
		if err != nil {
			closeAll()
			return ps, nil, nil, err
		}
		infos = append(infos, StoreInfo{Server: srv, Store: info.Store, Version: info.Version,
			Durability: info.Durability, Replication: info.Replication})
	}
	return ps, infos, closeAll, nil
}

// checkRedisDurability refuses a server whose appendfsync is not the one its name promises: a
// row named always must have been measured with always.
func checkRedisDurability(server string, info peers.Server) error {
	want := map[string]string{ServerRedisAlways: "appendfsync always", ServerRedisEverysec: "appendfsync everysec"}[server]
	if !strings.Contains(info.Durability, want) {
		return fmt.Errorf("%s: the server at its address runs %q, not %s", server, info.Durability, want)
	}
	return nil
}

// cassandraInfo describes the run's Cassandra cluster as a -peers row needs it.
func cassandraInfo(n NodeConfig) StoreInfo {
	d := "commitlog " + n.CommitlogSync
	switch n.CommitlogSync {
	case "periodic":
		d += " " + n.CommitlogSyncPeriod + " (fsync every period, acknowledged before it)"
	case "group":
		d += " " + n.CommitlogGroupWindow + " (fsync before the reply)"
	case "batch":
		d += " (fsync before the reply)"
	}
	if n.SkipSync {
		d += ", skip_sync: never fsynced"
	}
	return StoreInfo{Server: ServerCassandra, Store: "cassandra", Version: n.CassandraVersion, Durability: d,
		Replication: fmt.Sprintf("%d node(s), %s", n.Nodes, n.Replication)}
}

// peerGroup is one server's operations, run in phases of their own.
type peerGroup struct {
	server   string
	ops      []Operation
	baseline string
	run      *runner
}

// measurePeers builds the selected operations, runs, for each server, a warm-up and then one
// phase per concurrency level, and returns one result per level holding every server's rows.
func measurePeers(ctx context.Context, c Config, catalog []Spec, env Env, stderr io.Writer) ([]PhaseResult, []OpInfo, error) {
	ops, infos, err := buildOperations(ctx, c.Ops, catalog, env)
	defer closeOperations(ops, stderr)
	if err != nil {
		return nil, nil, err
	}
	specs := map[string]Spec{}
	for _, s := range catalog {
		specs[s.Name] = s
	}
	var groups []*peerGroup
	for _, srv := range peerServers(c.Ops, catalog) {
		g := &peerGroup{server: srv, baseline: Baseline}
		for _, op := range ops {
			if s := specs[op.Name()]; cmp(s.Server, ServerCassandra) == srv {
				g.ops = append(g.ops, op)
				if s.Baseline != "" {
					g.baseline = s.Baseline
				}
			}
		}
		groups = append(groups, g)
	}
	plans := c.phases()
	var total time.Duration
	for _, p := range plans {
		total += p.duration * time.Duration(len(groups))
	}
	lv := &live{}
	prog := newProgress(stderr, c.Quiet, total, lv)
	defer prog.close()
	for _, g := range groups {
		g.run = newRunner(g.ops, env.MaxWorkers, lv, max(5*time.Second, c.Duration/2))
	}
	var (
		results []PhaseResult
		before  time.Duration
		index   int // every phase of every server has its own index, so keys never repeat
	)
	for level, p := range plans {
		merged := PhaseResult{Name: p.label() + ", one server at a time", Mode: p.mode, Workers: p.workers,
			RatePerS: p.rate, LatencyFrom: "send"}
		var requests float64
		for k := range groups {
			g := groups[(k+level)%len(groups)]
			prog.phase(before, p.duration)
			res, err := g.run.run(ctx, index, p)
			if err != nil {
				return nil, nil, err
			}
			index++
			before += p.duration
			setRatios(res.Operations, g.baseline)
			merged.DurationS += res.DurationS
			merged.ElapsedS += res.ElapsedS
			merged.LatencyFrom = res.LatencyFrom
			for _, s := range res.Operations {
				requests += float64(s.Requests)
			}
			merged.Operations = append(merged.Operations, res.Operations...)
		}
		if p.mode == ModeWarmup {
			continue
		}
		if merged.ElapsedS > 0 {
			merged.Throughput = requests / merged.ElapsedS
		}
		// Report in catalog order, whatever order the servers ran in.
		slices.SortStableFunc(merged.Operations, func(a, b Summary) int {
			return slices.Index(c.Ops, a.Op) - slices.Index(c.Ops, b.Op)
		})
		results = append(results, merged)
	}
	return results, infos, nil
}

// peerEntries flattens a -peers report into its (store, operation, workers) rows.
func peerEntries(r *Report, catalog []Spec) []Entry {
	stores := map[string]StoreInfo{}
	for _, s := range r.Stores {
		stores[s.Server] = s
	}
	specs := map[string]Spec{}
	for _, s := range catalog {
		specs[s.Name] = s
	}
	var out []Entry
	for _, p := range r.Phases {
		for _, s := range p.Operations {
			spec := specs[s.Op]
			st := stores[cmp(spec.Server, ServerCassandra)]
			out = append(out, Entry{Store: st.Store, Server: st.Server, Operation: s.Op, Workers: p.Workers,
				Durability: st.Durability, Replication: st.Replication, Requests: s.Requests, Errors: s.Errors,
				Timeouts: s.Timeouts, P50Ms: s.P50Ms, P99Ms: s.P99Ms, ReqPerS: s.MessagesPerS,
				Baseline: cmp(spec.Baseline, Baseline), RatioP50: s.RatioP50, RatioP99: s.RatioP99})
		}
	}
	return out
}

// executePeers is Execute's -peers part: it opens the peer servers, measures and fills r.
func executePeers(ctx context.Context, c Config, catalog []Spec, env Env, r *Report, stderr io.Writer) error {
	servers := peerServers(c.Ops, catalog)
	ps, infos, closePeers, err := connectPeers(ctx, c, servers, r.RunID, env.MaxWorkers)
	if err != nil {
		return err
	}
	defer closePeers()
	env.Peers = ps
	if slices.Contains(servers, ServerCassandra) {
		r.Stores = append(r.Stores, cassandraInfo(r.Node))
	}
	r.Stores = append(r.Stores, infos...)
	if r.Phases, r.Operations, err = measurePeers(ctx, c, catalog, env, stderr); err != nil {
		return err
	}
	r.Entries = peerEntries(r, catalog)
	return nil
}
