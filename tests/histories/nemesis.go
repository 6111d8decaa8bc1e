package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nemesis carries out a schedule's faults on the cluster (through cluster.sh) and on the client
// processes, and writes each fault's start and end into the history.
type nemesis struct {
	script  string // cluster.sh
	runDir  string // CLUSTER_RUN_DIR: where each node's PID file is
	clients *clients
	rec     *recorder
	log     func(format string, args ...any)
	down    map[string]bool // nodes killed and not yet restarted
}

// run carries out faults in order, each at its planned offset from start or, when the one
// before ended late (a node's restart), as soon as it ended, until ctx ends. It returns the
// faults it carried out.
func (n *nemesis) run(ctx context.Context, start time.Time, faults []fault) int {
	done := 0
	for _, f := range faults {
		select {
		case <-ctx.Done():
			return done
		case <-time.After(time.Until(start.Add(f.At))):
		}
		if err := n.inject(ctx, f); err != nil {
			n.log("nemesis: %s %s: %v", f.Kind, f.Target, err)
			continue
		}
		done++
	}
	return done
}

// inject starts f, holds it for f.For and ends it, recording both.
func (n *nemesis) inject(ctx context.Context, f fault) error {
	begin, end, err := n.actions(f)
	if err != nil {
		return err
	}
	n.rec.add(Entry{Type: "nemesis", Proc: "nemesis", Phase: "start", Op: f.Kind, Target: f.Target, Arg: skewArg(f)})
	err = begin()
	if err != nil {
		n.rec.add(Entry{Type: "nemesis", Proc: "nemesis", Phase: "end", Op: f.Kind, Target: f.Target, Error: "start failed", Msg: err.Error()})
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(f.For):
	}
	err = end()
	e := Entry{Type: "nemesis", Proc: "nemesis", Phase: "end", Op: f.Kind, Target: f.Target}
	if err != nil {
		e.Error, e.Msg = "end failed", err.Error()
	}
	n.rec.add(e)
	return err
}

func skewArg(f fault) string {
	if f.Skew == 0 {
		return ""
	}
	return f.Skew.String()
}

// actions returns how f starts and ends.
func (n *nemesis) actions(f fault) (begin, end func() error, err error) {
	idx, err := strconv.Atoi(f.Target[1:])
	if err != nil {
		return nil, nil, fmt.Errorf("histories: bad target %q", f.Target)
	}
	node := f.Target[1:]
	switch f.Kind {
	case "kill-node":
		kill := func() error { n.down[node] = true; return n.cluster("kill", node) }
		restart := func() error {
			if err := n.cluster("restart", node); err != nil {
				return err
			}
			delete(n.down, node)
			return nil
		}
		return kill, restart, nil
	case "pause-node":
		return func() error { return n.signalNode(idx, syscall.SIGSTOP) }, func() error { return n.signalNode(idx, syscall.SIGCONT) }, nil
	case "partition-node":
		return func() error { return n.cluster("isolate", node) }, func() error { return n.cluster("heal") }, nil
	case "kill-client":
		return func() error { return n.clients.kill(idx) }, func() error { return n.clients.start(idx) }, nil
	case "pause-client":
		return func() error { return n.pauseClient(idx) }, func() error { return n.resumeClient(idx) }, nil
	case "clock-client":
		file := n.clients.skewFile(idx)
		return func() error { return os.WriteFile(file, []byte(fmt.Sprint(int64(f.Skew))), 0o644) },
			func() error { return os.WriteFile(file, []byte("0"), 0o644) }, nil
	}
	return nil, nil, fmt.Errorf("histories: unknown fault %q", f.Kind)
}

// heldPatience is how long a client's pause may wait for one of its workers to hold a claim
// with its effect written; with six workers that takes well under a second.
const heldPatience = 3 * time.Second

// pauseClient stops client i once a worker of its holds a claim with its effect written, and
// names the keys its workers hold for the other clients to retry (retry.go).
func (n *nemesis) pauseClient(i int) error {
	file := n.clients.history(i)
	if !awaitHeldEffect(file, heldPatience) {
		n.log("nemesis: pause-client p%d: no worker held a claim with its effect written within %v", i, heldPatience)
	}
	if err := n.clients.signal(i, syscall.SIGSTOP); err != nil {
		return err
	}
	var keys []string
	for _, c := range heldClaims(file) {
		if !slices.Contains(keys, c.key) { // several workers may be calling on one key
			keys = append(keys, c.key)
		}
	}
	slot := fmt.Sprintf("p%d", i)
	n.rec.add(Entry{Type: "nemesis", Proc: "nemesis", Phase: "retry", Op: "pause-client", Target: slot, Arg: strings.Join(keys, " ")})
	return writeRetries(n.clients.retryFile(), slot, keys)
}

// resumeClient clears the retry file and resumes client i.
func (n *nemesis) resumeClient(i int) error {
	if err := writeRetries(n.clients.retryFile(), "", nil); err != nil {
		return err
	}
	return n.clients.signal(i, syscall.SIGCONT)
}

// cluster runs cluster.sh with args (a node's restart waits until it answers CQL).
func (n *nemesis) cluster(args ...string) error {
	start := time.Now()
	out, err := exec.Command(n.script, args...).CombinedOutput()
	n.log("cluster.sh %s (%v)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("cluster.sh %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// signalNode sends sig to node i's Cassandra process.
func (n *nemesis) signalNode(i int, sig syscall.Signal) error {
	b, err := os.ReadFile(filepath.Join(n.runDir, fmt.Sprintf("n%d", i), "cassandra.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}

// healAll undoes whatever a fault cut short may have left: every node resumed, the partitions
// healed, every node up, every clock back, nothing left to retry.
func (n *nemesis) healAll(nodes int) {
	for i := 1; i <= nodes; i++ {
		_ = n.signalNode(i, syscall.SIGCONT)
	}
	if nodes > 0 {
		_ = n.cluster("heal")
	}
	for node := range n.down {
		if n.cluster("restart", node) == nil {
			delete(n.down, node)
		}
	}
	for i := range n.clients.procs {
		_ = os.WriteFile(n.clients.skewFile(i), []byte("0"), 0o644)
	}
	_ = writeRetries(n.clients.retryFile(), "", nil)
}
