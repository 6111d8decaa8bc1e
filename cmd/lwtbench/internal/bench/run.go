package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gocql/gocql"
)

// Run is the lwtbench command: it parses args, runs the benchmark and writes its table to
// stdout, its JSON and chart to the output directory, and its progress and notices to stderr.
// getenv supplies CASSANDRA_HOSTS. ExitCode maps the returned error to the process's status.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	catalog := Catalog()
	c, err := ParseFlags(args, getenv, catalog)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout, getenv, catalog)
		return nil
	}
	if err != nil {
		return err
	}
	if c.Peers {
		catalog = PeersCatalog()
	}
	r, err := Execute(ctx, c, catalog, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted, no result written: %w", err)
		}
		return err
	}
	write := WriteTable
	if c.Peers {
		write = WritePeersTable
	}
	if err := write(stdout, r); err != nil {
		return err
	}
	chart := WriteChart
	if c.Peers {
		chart = func(w io.Writer, r *Report) error { return WritePeersChart(w, r, catalog) }
	}
	jsonPath, pngPath, err := writeFiles(c.OutDir, r, chart)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", jsonPath, pngPath)
	return nil
}

// ExitCode is the process status for Run's error: 0 for none, 2 for a bad command line, 1 for
// anything else (an unreachable cluster included).
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	}
	return 1
}

// adminTimeout bounds schema changes and probes, which may take seconds on a loaded cluster;
// the benchmark's own requests use the (shorter) -timeout.
const adminTimeout = 60 * time.Second

// Execute runs the benchmark described by c with the operations of catalog that c selects, and
// returns its report. Progress goes to stderr when it is a terminal.
func Execute(ctx context.Context, c Config, catalog []Spec, stderr io.Writer) (*Report, error) {
	started := time.Now().UTC().Round(0)
	runID := newRunID(started)
	keyspace := c.Keyspace
	if keyspace == "" {
		keyspace = "lwtbench_" + runID
	}
	driverLog := io.Discard
	if c.Verbose {
		driverLog = stderr
	}
	admin, err := connectAdmin(c, driverLog)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	drop, kept, err := prepareKeyspace(ctx, admin, c, keyspace)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintf(stderr, "lwtbench: drop keyspace %s: %v\n", keyspace, err)
		}
	}()
	if kept {
		fmt.Fprintf(stderr, "lwtbench: keyspace %s is kept after the run\n", keyspace)
	}
	node, err := probeNode(ctx, admin, keyspace)
	if err != nil {
		return nil, err
	}
	cluster, info, err := newCluster(c, driverLog)
	if err != nil {
		return nil, err
	}
	session, err := connect(cluster)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	r := &Report{
		Tool: "lwtbench", Started: started, Keyspace: keyspace, RunID: runID, Baseline: Baseline,
		Node: node, Client: clientConfig(c, cluster, info),
	}
	if c.HotCounter {
		r.Baseline = opRecord
		r.Phases, r.HotCounter, err = hotCounter(ctx, c, session, keyspace, stderr)
		return r, err
	}
	env := Env{Session: session, Keyspace: keyspace, RunID: runID, Consistency: c.Consistency,
		Serial: c.Serial, BatchSize: c.BatchSize, MaxWorkers: maxPhaseWorkers(c.phases()), WorkerSpans: workerSpans(c.phases()),
		RequestTimeout: c.RequestTimeout}
	if c.Peers {
		return r, executePeers(ctx, c, catalog, env, r, stderr)
	}
	if r.Phases, r.Operations, err = measure(ctx, c, catalog, env, stderr); err != nil {
		return nil, err
	}
	return r, nil
}

func connectAdmin(c Config, driverLog io.Writer) (*gocql.Session, error) {
	cl, _, err := newCluster(c, driverLog)
	if err != nil {
		return nil, err
	}
	cl.Timeout = adminTimeout
	return connect(cl)
}

func maxPhaseWorkers(phases []phasePlan) int {
	n := 1
	for _, p := range phases {
		n = max(n, p.workers)
	}
	return n
}

// workerSpans returns, for each worker index of any phase, the total duration of the phases that
// have a worker of that index.
func workerSpans(phases []phasePlan) []time.Duration {
	spans := make([]time.Duration, maxPhaseWorkers(phases))
	for _, p := range phases {
		for w := range p.workers {
			spans[w] += p.duration
		}
	}
	return spans
}

// measure builds and sets up the selected operations, runs every phase and returns the
// measured ones (the warm-up is discarded).
func measure(ctx context.Context, c Config, catalog []Spec, env Env, stderr io.Writer) ([]PhaseResult, []OpInfo, error) {
	ops, infos, err := buildOperations(ctx, c.Ops, catalog, env)
	defer closeOperations(ops, stderr)
	if err != nil {
		return nil, nil, err
	}
	plans := c.phases()
	var total time.Duration
	for _, p := range plans {
		total += p.duration
	}
	lv := &live{}
	prog := newProgress(stderr, c.Quiet, total, lv)
	defer prog.close()
	run := newRunner(ops, env.MaxWorkers, lv, max(5*time.Second, c.Duration/2))
	var (
		results []PhaseResult
		before  time.Duration
	)
	for i, p := range plans {
		prog.phase(before, p.duration)
		res, err := run.run(ctx, i, p)
		if err != nil {
			return nil, nil, err
		}
		before += p.duration
		if p.mode != ModeWarmup {
			results = append(results, res)
		}
	}
	return results, infos, nil
}

// buildOperations constructs the named operations from catalog, in catalog order, and runs
// their Setup. It returns what it built even on error, so the caller can close it.
func buildOperations(ctx context.Context, names []string, catalog []Spec, env Env) ([]Operation, []OpInfo, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var (
		ops   []Operation
		infos []OpInfo
	)
	for _, spec := range catalog {
		if !want[spec.Name] {
			continue
		}
		op, err := spec.New(env)
		if err != nil {
			return ops, nil, fmt.Errorf("operation %s: %w", spec.Name, err)
		}
		ops = append(ops, op)
		infos = append(infos, OpInfo{Name: spec.Name, Description: spec.Description})
		if err := op.Setup(ctx); err != nil {
			return ops, nil, fmt.Errorf("set up %s: %w", spec.Name, err)
		}
	}
	return ops, infos, nil
}

func closeOperations(ops []Operation, stderr io.Writer) {
	for _, op := range ops {
		if cl, ok := op.(io.Closer); ok {
			if err := cl.Close(); err != nil {
				fmt.Fprintf(stderr, "lwtbench: close %s: %v\n", op.Name(), err)
			}
		}
	}
}

// writeFiles writes the report's JSON and chart into dir, named after the run.
func writeFiles(dir string, r *Report, chart func(io.Writer, *Report) error) (jsonPath, pngPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	prefix := "lwtbench-"
	if len(r.Entries) > 0 {
		prefix = "lwtbench-peers-"
	}
	base := filepath.Join(dir, prefix+r.RunID)
	jsonPath, pngPath = base+".json", base+".png"
	if err := writeFile(jsonPath, func(w io.Writer) error { return WriteJSON(w, r) }); err != nil {
		return "", "", err
	}
	if err := writeFile(pngPath, func(w io.Writer) error { return chart(w, r) }); err != nil {
		return "", "", err
	}
	return jsonPath, pngPath, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
