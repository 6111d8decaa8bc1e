package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/schema"
)

// runStats is one seed's run, on the library as built or on a mutant.
type runStats struct {
	Seed       uint64           `json:"seed"`
	Mutant     string           `json:"mutant,omitempty"`
	Seconds    float64          `json:"seconds"`
	Operations int              `json:"operations"`
	Ends       map[string]int   `json:"ends"` // ok, fail, info
	Faults     map[string]int   `json:"faults"`
	Keys       int              `json:"keys"`
	Undecided  int              `json:"undecided"` // keys Porcupine could not decide in time
	Totals     map[string]int64 `json:"totals"`    // each counter's final total
	Violations []violation      `json:"violations"`
	History    string           `json:"history"`
	Schedule   []fault          `json:"schedule"`
}

// lease is the clients' executor lease. Cassandra ends it between 2 and 3 s after the last
// renewal (its TTL is in whole seconds, plus one), so every pause lasts longer than 3 s.
const lease = 2 * time.Second

// runSeed runs the clients for length under seed's schedule, heals the cluster, reads every
// key's final state and checks the history.
func runSeed(cfg runConfig, admin *gocql.Session, ks string, seed uint64, mutant string, length time.Duration) (runStats, error) {
	name := fmt.Sprintf("seed-%d", seed)
	bin := filepath.Join(cfg.binDir, "histories")
	if mutant != "" {
		name += "-" + mutant
		bin += "-mutant_" + mutant
	}
	dir := filepath.Join(cfg.out, "histories", name)
	if err := os.RemoveAll(dir); err != nil {
		return runStats{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runStats{}, err
	}
	schedule := plan(seed, planOptions{length: length, clients: cfg.clients, nodes: cfg.nodes, lease: lease + time.Second})
	logf("%s: %d faults planned over %v", name, len(schedule), length)
	started := time.Now()
	runWall := time.Now().UnixNano() // the messages' times count from it
	files, err := drive(cfg, seed, bin, dir, ks, name, length, schedule, runWall)
	if err != nil {
		return runStats{}, err
	}
	history, err := readHistory(files...)
	if err != nil {
		return runStats{}, err
	}
	after, err := afterRun(admin, ks, name, dir, runWall, seed, history)
	if err != nil {
		return runStats{}, err
	}
	history, final, messages, totals := after.history, after.final, after.messages, after.totals
	rs := runStats{Seed: seed, Mutant: mutant, Ends: countOps(history), Faults: faultCounts(history),
		History: filepath.Join(dir, "history.jsonl"), Schedule: schedule}
	if err := writeHistory(rs.History, history); err != nil {
		return rs, err
	}
	rs.Keys, rs.Undecided, rs.Violations = checkRecords(dir, history, final)
	for _, v := range slices.Concat(checkCounters(history, totals), checkMessages(history, messages), checkPublished(history, final)) {
		v.Counterexample = writeCounterexample(dir, history, v.Key)
		rs.Violations = append(rs.Violations, v)
	}
	rs.Totals = totals
	rs.Operations = rs.Ends["ok"] + rs.Ends["fail"] + rs.Ends["info"]
	rs.Seconds = time.Since(started).Seconds()
	if rs.Violations == nil {
		rs.Violations = []violation{}
	}
	logf("%s: %d operations %v, faults %v, %d keys (%d undecided), %d violations", name, rs.Operations, rs.Ends, rs.Faults,
		rs.Keys, rs.Undecided, len(rs.Violations))
	for _, v := range rs.Violations {
		logf("%s: VIOLATION %s on %s: %s (%s)", name, v.Check, v.Key, v.Detail, v.Counterexample)
	}
	return rs, nil
}

// observed is what the checks read once a run's clients stopped: the history with the lines of
// the reads below, each key's final state, each message's last delivery and each counter's
// total.
type observed struct {
	history  []Entry
	final    map[string]finalState
	messages map[string]messageState
	totals   map[string]int64
}

// afterRun reads every key's final state, delivers every message once more, reads the totals
// and drains the outbox, each recorded in the history.
func afterRun(admin *gocql.Session, ks, name, dir string, runWall int64, seed uint64, history []Entry) (observed, error) {
	ended := time.Now()
	final, finalOps := readFinal(admin, ks, name, history)
	history = append(history, finalOps...)
	read := time.Now()
	messages := redeliverAll(admin, ks, name, runWall, history)
	redelivered := time.Now()
	totals, totalOps := readTotals(admin, ks, name)
	history = append(history, totalOps...)
	drained, err := drainRelay(admin, ks, name, dir, history, final, seed)
	if err != nil {
		return observed{}, err
	}
	history = append(history, drained...)
	logf("%s: after the run: final reads %v, last deliveries of %d messages %v, totals and drain %v", name,
		read.Sub(ended).Round(time.Millisecond), len(messages), redelivered.Sub(read).Round(time.Millisecond),
		time.Since(redelivered).Round(time.Millisecond))
	return observed{history: history, final: final, messages: messages, totals: totals}, nil
}

// drive starts the clients, carries out the schedule, stops the clients and heals the cluster.
// It returns the history files: the clients' and the nemesis's.
func drive(cfg runConfig, seed uint64, bin, dir, ks, ns string, length time.Duration, schedule []fault, runWall int64) ([]string, error) {
	nemFile := filepath.Join(dir, "nemesis.jsonl")
	rec, err := newRecorder(nemFile)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	cs := &clients{bin: bin, dir: dir, seed: seed, args: []string{"-hosts", cfg.hosts, "-keyspace", ks, "-namespace", ns,
		"-workers", fmt.Sprint(cfg.workers), "-run-start", fmt.Sprint(monotonic()), "-run-wall", fmt.Sprint(runWall), "-lease", lease.String(), fmt.Sprintf("-skew-all=%v", cfg.skewAll), fmt.Sprintf("-mixed-paths=%v", cfg.mixedPaths)}}
	n := &nemesis{script: cfg.script, runDir: cfg.runDir, clients: cs, rec: rec, log: logf, down: map[string]bool{}}
	for i := range cfg.clients {
		if err := cs.start(i); err != nil {
			return nil, err
		}
	}
	// Every planned fault is carried out, however long a node's restart delays the ones after
	// it: the run lasts length, or until the last fault ended.
	start := time.Now()
	n.run(context.Background(), start, schedule)
	time.Sleep(time.Until(start.Add(length)))
	cs.stopAll(30 * time.Second)
	n.healAll(cfg.nodes)
	return append(cs.files(), nemFile), nil
}

// setupKeyspace creates ks afresh with the library's schema and the effects table, replicated
// rf times, on a session of its own (the final reads use it too). Every run of one `histories
// run` uses it, each in a namespace of its own: a schema change costs tens of seconds on a
// loaded cluster.
func setupKeyspace(cfg runConfig, ks string) (*gocql.Session, error) {
	s, err := connect(cfg.hosts, "system", 20*time.Second) // schema changes wait for agreement
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	repl := schema.SimpleStrategy(cfg.rf)
	if err := s.Query("DROP KEYSPACE IF EXISTS " + ks).WithContext(ctx).Exec(); err != nil {
		s.Close()
		return nil, err
	}
	for try := 1; ; try++ {
		if err = schema.Apply(ctx, s, schema.WithKeyspace(ks), schema.WithReplication(repl)); err == nil || try == 3 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if err == nil {
		err = s.Query("CREATE TABLE IF NOT EXISTS " + ks + ".effects (key text PRIMARY KEY, fence bigint, value text)").
			WithContext(ctx).Exec()
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("histories: keyspace %s: %w", ks, err)
	}
	return s, nil
}

// finalReaders is how many keys readFinal reads at once. Each key's record and effect row are
// partitions of their own, so the reads do not contend; one at a time, the hundreds of keys of
// a run cost it over ten seconds of round trips.
const finalReaders = 8

// readFinal reads, at SERIAL, the record and the effect row of every key the history touched,
// retrying each for up to two minutes (a node restarted at the end may still be joining). It
// returns the states and the reads as history lines, after every other line. The clients have
// stopped, so nothing writes the records any more: the reads run finalReaders at a time, and
// their lines are stamped after the last of them, key after key.
func readFinal(s *gocql.Session, ks, ns string, history []Entry) (map[string]finalState, []Entry) {
	store, err := lwt.NewStore(s, lwt.IdempotencyKeys(ks))
	if err != nil {
		panic(err) // the table's name is valid: setupKeyspace made it
	}
	keys := map[string]bool{}
	for _, e := range history {
		if e.Op == "exec" || e.Op == "read" {
			keys[e.Key] = true
		}
	}
	sorted := sortedKeys(keys)
	states := make([]finalState, len(sorted))
	errs := make([]error, len(sorted))
	next := make(chan int)
	var wg sync.WaitGroup
	for range finalReaders {
		wg.Go(func() {
			for i := range next {
				states[i], errs[i] = readKey(store, s, ks, ns, sorted[i])
			}
		})
	}
	for i := range sorted {
		next <- i
	}
	close(next)
	wg.Wait()
	final := map[string]finalState{}
	var ops []Entry
	for i, k := range sorted {
		f, err := states[i], errs[i]
		if err != nil {
			logf("final read of %s: %v", k, err)
			continue
		}
		final[k] = f
		value := ""
		if f.Status == string(lwt.StatusCompleted) {
			value = f.Result
		}
		mono, wall := monotonic(), time.Now().UTC().Format(time.RFC3339Nano)
		ops = append(ops, Entry{Type: "invoke", Proc: "final", Op: "read", Key: k, Mono: mono, Wall: wall},
			Entry{Type: "ok", Proc: "final", Op: "read", Key: k, Value: value, Fence: f.Fence, Mono: mono + 1, Wall: wall})
	}
	return final, ops
}

func readKey(store *lwt.Store, s *gocql.Session, ks, ns, k string) (finalState, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, err := tryReadKey(store, s, ks, ns, k)
		if err == nil || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(time.Second)
	}
}

func tryReadKey(store *lwt.Store, s *gocql.Session, ks, ns, k string) (finalState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var f finalState
	rec, err := store.Get(ctx, lwt.IdempotencyKey(ns, k))
	switch {
	case errors.Is(err, lwt.ErrNotFound):
		f.Status = "NONE"
	case err != nil:
		return f, err
	default:
		f.Status, f.Result, f.Fence = string(rec.Status), string(rec.Result), rec.Fence
	}
	f.Effect, f.EffectFence, err = readEffect(ctx, s, ks, ns+"/"+k)
	return f, err
}

// readEffect reads an effect row at SERIAL: its value and fence, or "" and 0 if there is none.
func readEffect(ctx context.Context, s *gocql.Session, ks, key string) (value string, fence int64, err error) {
	row, found, err := cas.ReadSerial(ctx, s.Query("SELECT fence, value FROM "+ks+".effects WHERE key = ?", key), gocql.Serial)
	if err != nil || !found {
		return "", 0, err
	}
	fence, _ = row["fence"].(int64)
	value, _ = row["value"].(string)
	return value, fence, nil
}

// readTotals reads each counter's final total with a log of its own (the machine's clock),
// retrying each for up to two minutes, and returns them with the reads as history lines.
func readTotals(s *gocql.Session, ks, ns string) (map[string]int64, []Entry) {
	log, err := events.NewLog(s, events.WithKeyspace(ks), events.WithConsistency(gocql.Quorum), events.WithSerialConsistency(gocql.Serial))
	if err != nil {
		panic(err) // the keyspace's name is valid: setupKeyspace made it
	}
	totals := map[string]int64{}
	var ops []Entry
	for i := range counters {
		k := counterName(ns, i)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			n, err := log.Total(ctx, k)
			cancel()
			if err == nil {
				totals[k] = n
				mono, wall := monotonic(), time.Now().UTC().Format(time.RFC3339Nano)
				ops = append(ops, Entry{Type: "invoke", Proc: "final", Op: "total", Key: k, Mono: mono, Wall: wall},
					Entry{Type: "ok", Proc: "final", Op: "total", Key: k, Value: fmt.Sprint(n), Mono: mono + 1, Wall: wall})
				break
			}
			if time.Now().After(deadline) {
				logf("final total of %s: %v", k, err)
				break
			}
			time.Sleep(time.Second)
		}
	}
	return totals, ops
}
