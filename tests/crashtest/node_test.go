//go:build faults

package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

// The tests' nodes listen on 127.0.0.71 and up, on ports of their own, so they meet neither
// the development node (127.0.0.1:9042), nor the benchmark's (9043/7100), nor a Docker node
// published on 0.0.0.0:9042.
const (
	cqlPort     = 9342
	storagePort = 7342
	keyspace    = "crash"
)

// node is a Cassandra node a test started with node.sh in durable mode, so a kill loses what
// a crash of a production node loses and nothing more.
type node struct {
	addr      string
	commitlog string // periodic, group or batch
	runDir    string
	repo      string
}

// startNode starts a fresh node on addr with the given commitlog mode, and stops it (removing
// its data) when the test ends; on failure it first logs the end of the node's log.
func startNode(t *testing.T, addr, commitlog string) *node {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatalf("crashtest: repository root: %v", err)
	}
	n := &node{addr: addr, commitlog: commitlog, runDir: t.TempDir(), repo: repo}
	stopped := n.startReaper(t)
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(n.runDir, "logs", "system.log")); err == nil {
				t.Logf("crashtest: last lines of %s's log:\n%s", n.addr, tail(string(log), 30))
			}
		}
		if out, err := n.script("down"); err != nil {
			t.Errorf("crashtest: node.sh down on %s: %v\n%s", n.addr, err, out)
		}
		stopped()
	})
	n.mustScript(t, "up")
	return n
}

// startReaper starts a process that stops the node if the test binary dies before its cleanups
// can (a -timeout panic, Ctrl-C). The returned function tells it that the node was stopped, and
// waits for it to exit.
func (n *node) startReaper(t *testing.T) (stopped func()) {
	t.Helper()
	return startReaper(t, n.scriptPath(), n.repo, n.env())
}

// startReaper starts a process that runs `script down` with env if the test binary dies before
// its cleanups can: the test binary run again as a worker, in a process group of its own so a
// signal to the test's group spares it, that waits for its stdin to close. The returned
// function tells it that the script's service was stopped, and waits for it to exit.
func startReaper(t *testing.T, script, repo string, env []string) (stopped func()) {
	t.Helper()
	spec, err := json.Marshal(workerSpec{Mode: "reaper", Script: script, Repo: repo})
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(env, workerEnv+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("crashtest: reaper: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("crashtest: start the reaper: %v", err)
	}
	return func() {
		_, _ = io.WriteString(stdin, "stopped\n")
		_ = stdin.Close()
		_ = cmd.Wait()
	}
}

func (n *node) scriptPath() string { return filepath.Join(n.repo, "scripts", "cassandra", "node.sh") }

// env is the test's environment with every CASSANDRA_ setting replaced by this node's.
func (n *node) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CASSANDRA_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"CASSANDRA_ADDRESS="+n.addr,
		fmt.Sprintf("CASSANDRA_CQL_PORT=%d", cqlPort),
		fmt.Sprintf("CASSANDRA_STORAGE_PORT=%d", storagePort),
		"CASSANDRA_DURABLE=1",
		"CASSANDRA_COMMITLOG="+n.commitlog,
		"CASSANDRA_RUN_DIR="+n.runDir)
}

func (n *node) script(command string) (string, error) {
	return runScript(n.scriptPath(), n.repo, n.env(), command)
}

// runScript runs one subcommand of a service script (node.sh, broker.sh) in repo with env.
func runScript(script, repo string, env []string, command string) (string, error) {
	cmd := exec.Command(script, command)
	cmd.Dir = repo
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustScript runs a node.sh subcommand and fails the test, with the script's output, if it
// fails: a missing Java or Maven is reported here.
func (n *node) mustScript(t *testing.T, command string) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := n.script(command)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("crashtest: node.sh %s on %s (commitlog %s): %v\n%s(the crash tests start nodes of their own, "+
			"so they need Java 17 and Maven or cached jars; CASSANDRA_HOSTS does not replace them)", command, n.addr, n.commitlog, err, out)
	}
	t.Logf("crashtest: node.sh %s on %s (commitlog %s) took %s", command, n.addr, n.commitlog, took.Round(time.Millisecond))
	return took
}

// kill stops the node with SIGKILL, through node.sh, keeping its data.
func (n *node) kill(t *testing.T) { n.mustScript(t, "kill") }

// restart starts the node again on its data: Cassandra replays the commitlog.
func (n *node) restart(t *testing.T) { n.mustScript(t, "restart") }

func (n *node) hosts() string { return fmt.Sprintf("%s:%d", n.addr, cqlPort) }

// session connects to the node's keyspace. The session is closed when the test ends; close it
// earlier to drop it before a kill.
func (n *node) session(t *testing.T) *gocql.Session {
	t.Helper()
	s, err := connect(n.hosts(), keyspace)
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// applySchema creates the toolkit's tables in the test keyspace.
func (n *node) applySchema(t *testing.T, extra ...string) {
	t.Helper()
	s, err := connect(n.hosts(), "")
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := schema.Apply(ctx, s, schema.WithKeyspace(keyspace)); err != nil {
		t.Fatalf("crashtest: apply the schema on %s: %v", n.addr, err)
	}
	for _, stmt := range extra {
		if err := s.Query(stmt).WithContext(ctx).Exec(); err != nil {
			t.Fatalf("crashtest: %s: %v", stmt, err)
		}
	}
}

// connect opens a session as the toolkit's tests do: QUORUM and SERIAL, no driver retries (an
// LWT must never be re-sent by the driver), and no driver log: a killed node makes it chatter.
func connect(hosts, ks string) (*gocql.Session, error) { return connectWith(hosts, ks, nil) }

// connectWith is connect with the configuration changed by tune first (nil: none).
func connectWith(hosts, ks string, tune func(*gocql.ClusterConfig)) (*gocql.Session, error) {
	c := testnode.ClusterFor(strings.Split(hosts, ",")...)
	c.Keyspace = ks
	c.Timeout = 10 * time.Second
	c.DisableInitialHostLookup = true
	c.Logger = discard{}
	if tune != nil {
		tune(c)
	}
	s, err := c.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", hosts, err)
	}
	return s, nil
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// discard drops the driver's log lines.
type discard struct{}

func (discard) Print(...any)          {}
func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}
