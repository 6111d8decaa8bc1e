//go:build soak

package soak

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// line is one JSON line a process of examples/outbox prints (its roles.go).
type line struct {
	Event  string
	Addr   string
	Orders []string
	Order  string
	Err    string
}

// proc is one process of the chain: the order service (api), a relay or the consumer.
type proc struct {
	role string
	cmd  *exec.Cmd
	done chan struct{} // closed when its stdout ended
	up   chan struct{} // api: closed when it listens
}

// chain starts, kills and restarts the processes, and records what they report.
type chain struct {
	t        *testing.T
	bin      string
	args     []string
	tally    *tally
	mu       sync.Mutex
	procs    map[string]*proc
	restarts map[string]int
}

// buildChain builds examples/outbox into the test's temporary directory.
func buildChain(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "outbox-chain")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(repoRoot(t), "examples", "outbox")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("soak: build examples/outbox: %v\n%s", err, out)
	}
	return bin
}

// start starts role with its own arguments after the chain's, and waits for the order service
// to listen. Processes are killed when the test ends.
func (c *chain) start(role string, args ...string) *proc {
	c.t.Helper()
	cmd := exec.Command(c.bin, append(append([]string{"-role", role}, c.args...), args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatalf("soak: %v", err)
	}
	// The process's own complaints (a failed start, a panic) go to a log of its role.
	if dir := os.Getenv("SOAK_RUN_DIR"); dir != "" {
		if f, err := os.OpenFile(filepath.Join(dir, role+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			cmd.Stderr = f
			c.t.Cleanup(func() { _ = f.Close() })
		}
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("soak: start %s: %v", role, err)
	}
	p := &proc{role: role, cmd: cmd, done: make(chan struct{}), up: make(chan struct{})}
	c.t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	go func() {
		defer close(p.done)
		defer func() {
			if err := cmd.Wait(); err != nil {
				c.tally.record(role, line{Event: "exit", Err: err.Error()})
			}
		}()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var once sync.Once
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			if l.Event == "listening" {
				once.Do(func() { close(p.up) })
			}
			c.tally.record(role, l)
		}
	}()
	if role == "api" {
		select {
		case <-p.up:
		case <-p.done:
			c.t.Fatalf("soak: the order service ended before it listened")
		case <-time.After(2 * time.Minute):
			c.t.Fatalf("soak: the order service did not listen within 2 minutes")
		}
	}
	c.mu.Lock()
	c.procs[role] = p
	c.mu.Unlock()
	return p
}

// bounce ends role's process with sig (SIGTERM: it stops cleanly; SIGKILL: a crash) and starts
// it again with the same arguments.
func (c *chain) bounce(role string, sig syscall.Signal, args ...string) {
	c.t.Helper()
	c.mu.Lock()
	p := c.procs[role]
	c.restarts[role]++
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	c.start(role, args...)
}

// stopAll ends every process with SIGTERM.
func (c *chain) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}
}
