package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runConfig is one invocation of `histories run`.
type runConfig struct {
	hosts  string
	script string
	runDir string
	nodes  int
	rf     int
	seeds  []uint64
	// mutantSeeds are the seeds a mutant may need: it runs them in order until one catches it,
	// so the seeds past the library's cost time only when the first ones miss.
	mutantSeeds []uint64
	length      time.Duration
	mutants     []string
	mutantTime  time.Duration
	binDir      string
	clients     int
	workers     int
	out         string
	skewAll     bool
	mixedPaths  bool
}

func runFlags(args []string) (runConfig, error) {
	var c runConfig
	var seeds, mutantSeeds, mutants string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&c.hosts, "hosts", "", "CQL contact points, comma-separated")
	fs.StringVar(&c.script, "cluster", "scripts/cluster/cluster.sh", "cluster.sh, for node faults")
	fs.StringVar(&c.runDir, "cluster-run-dir", os.Getenv("CLUSTER_RUN_DIR"), "the cluster's run directory (node PID files)")
	fs.IntVar(&c.nodes, "nodes", 3, "nodes of the cluster; 0: a node that is not ours, no node faults")
	fs.IntVar(&c.rf, "rf", 3, "replication factor")
	fs.StringVar(&seeds, "seeds", "1,2,3", "seeds, comma-separated")
	fs.StringVar(&mutantSeeds, "mutant-seeds", "", "seeds a mutant runs until one catches it (default: -seeds)")
	fs.DurationVar(&c.length, "time", time.Minute, "each seed's run")
	fs.StringVar(&mutants, "mutants", "", "mutants to run (their binaries are in -bin-dir), comma-separated")
	fs.DurationVar(&c.mutantTime, "mutant-time", 40*time.Second, "each mutant's run on each seed")
	fs.StringVar(&c.binDir, "bin-dir", "bin", "where histories and histories-mutant_<name> are")
	fs.IntVar(&c.clients, "clients", 3, "client processes")
	fs.IntVar(&c.workers, "workers", 4, "workers per client process")
	fs.StringVar(&c.out, "out", "out", "results directory")
	fs.BoolVar(&c.skewAll, "skew-all", true, "clock faults skew the clients' event logs, guards and outboxes too, not only their executors (-skew-all=false: the executors only; docs/verification.md)")
	fs.BoolVar(&c.mixedPaths, "mixed-paths", false, "the clients deliver each message through Process and ProcessBatch both, which the guard does not support (docs/verification.md)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.seeds, err = parseSeeds(seeds); err != nil {
		return c, err
	}
	c.mutantSeeds = c.seeds
	if mutantSeeds != "" {
		if c.mutantSeeds, err = parseSeeds(mutantSeeds); err != nil {
			return c, err
		}
	}
	if mutants != "" {
		c.mutants = strings.Split(mutants, ",")
	}
	return c, nil
}

// parseSeeds reads a comma-separated list of seeds.
func parseSeeds(list string) ([]uint64, error) {
	var out []uint64
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("histories: bad seed %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// results is out/histories.json.
type results struct {
	Seeds           []uint64   `json:"seeds"`
	Operations      int        `json:"operations"`
	FaultKinds      []string   `json:"fault_kinds"`
	Violations      int        `json:"violations"`
	Mutants         []string   `json:"mutants"`
	MutantsDetected []string   `json:"mutants_detected"`
	Runs            []runStats `json:"runs"`
	Started         string     `json:"started"`
	Seconds         float64    `json:"seconds"`
}

// runAll runs every seed on the library as built, then every mutant on every seed, and writes
// the results. It fails if main has a violation or a mutant went undetected.
func runAll(args []string) error {
	cfg, err := runFlags(args)
	if err != nil {
		return err
	}
	start := time.Now()
	res := results{Seeds: cfg.seeds, Mutants: cfg.mutants, MutantsDetected: []string{}, Started: start.UTC().Format(time.RFC3339)}
	kinds := map[string]bool{}
	const ks = "histories"
	admin, err := setupKeyspace(cfg, ks)
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, seed := range cfg.seeds {
		rs, err := runSeed(cfg, admin, ks, seed, "", cfg.length)
		if err != nil {
			return err
		}
		res.add(rs, kinds)
		res.Violations += len(rs.Violations)
	}
	for _, m := range cfg.mutants {
		detected := false
		for _, seed := range cfg.mutantSeeds {
			rs, err := runSeed(cfg, admin, ks, seed, m, cfg.mutantTime)
			if err != nil {
				return err
			}
			res.add(rs, kinds)
			if len(rs.Violations) > 0 {
				detected = true
				break // caught: the other seeds would prove nothing more
			}
		}
		if detected {
			res.MutantsDetected = append(res.MutantsDetected, m)
		}
	}
	res.FaultKinds = sortedKeys(kinds)
	res.Seconds = time.Since(start).Seconds()
	if err := writeJSON(filepath.Join(cfg.out, "histories.json"), res); err != nil {
		return err
	}
	fmt.Printf("histories: %d seeds, %d operations, fault kinds %v, %d violations; mutants %v, detected %v (%.0f s)\n",
		len(res.Seeds), res.Operations, res.FaultKinds, res.Violations, res.Mutants, res.MutantsDetected, res.Seconds)
	if res.Violations > 0 || len(res.MutantsDetected) < len(res.Mutants) {
		return fmt.Errorf("histories: %d violations on the library as built, %d of %d mutants detected (see %s)",
			res.Violations, len(res.MutantsDetected), len(res.Mutants), filepath.Join(cfg.out, "histories.json"))
	}
	return nil
}

func (r *results) add(rs runStats, kinds map[string]bool) {
	r.Runs = append(r.Runs, rs)
	if rs.Mutant == "" {
		r.Operations += rs.Operations
	}
	for k := range rs.Faults {
		kinds[faultClass[k]] = true
	}
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// logf prints a progress line.
func logf(format string, args ...any) {
	fmt.Printf("%s histories: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// countOps counts a history's operations by their end: ok, fail, info (an invocation without
// a completion counts as info).
func countOps(history []Entry) map[string]int {
	open := map[string]bool{}
	n := map[string]int{}
	for _, e := range history {
		switch e.Type {
		case "nemesis", "publish", "effect":
		case "invoke":
			open[e.Proc] = true
		default:
			delete(open, e.Proc)
			n[e.Type]++
		}
	}
	n["info"] += len(open)
	return n
}

// faultCounts counts the faults a history's nemesis carried out, by kind.
func faultCounts(history []Entry) map[string]int {
	n := map[string]int{}
	for _, e := range history {
		if e.Type == "nemesis" && e.Phase == "start" {
			n[e.Op]++
		}
	}
	return n
}
