//go:build soak

package soak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// service is a node or a broker that the soak started with its script (node.sh, broker.sh) on
// a loopback address and ports of its own, in a run directory of its own: never the
// development node or broker.
type service struct {
	name, script, repo string
	env                []string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatalf("soak: repository root: %v", err)
	}
	return repo
}

// withEnv is the test's environment without any setting of prefix, plus set.
func withEnv(prefix string, set ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// startNode starts a durable node (commitlog group: an acknowledged write survives a SIGKILL)
// on addr:cqlPort and removes it when the test ends, on failure too.
func startNode(t *testing.T, addr string) *service {
	repo := repoRoot(t)
	s := &service{name: "node " + addr, repo: repo, script: filepath.Join(repo, "scripts", "cassandra", "node.sh"),
		env: withEnv("CASSANDRA_", "CASSANDRA_ADDRESS="+addr, fmt.Sprintf("CASSANDRA_CQL_PORT=%d", cqlPort),
			fmt.Sprintf("CASSANDRA_STORAGE_PORT=%d", storagePort), "CASSANDRA_DURABLE=1", "CASSANDRA_COMMITLOG=group",
			"CASSANDRA_HEAP=1G", "CASSANDRA_RUN_DIR="+runDir(t, "node"))}
	s.cleanup(t, "down", filepath.Join("logs", "system.log"))
	s.must(t, "up")
	return s
}

// startBroker starts a broker on addr:port (its controller on port+1) and removes it when the
// test ends; restart stops it (SIGTERM) and starts it on its data.
func startBroker(t *testing.T, addr string, port int) *service {
	repo := repoRoot(t)
	s := &service{name: fmt.Sprintf("broker %s:%d", addr, port), repo: repo, script: filepath.Join(repo, "scripts", "kafka", "broker.sh"),
		env: withEnv("KAFKA_", "KAFKA_ADDRESS="+addr, fmt.Sprintf("KAFKA_PORT=%d", port),
			fmt.Sprintf("KAFKA_CONTROLLER_PORT=%d", port+1), "KAFKA_RUN_DIR="+runDir(t, "broker"))}
	s.cleanup(t, "down", filepath.Join("logs", "kafka.log"))
	s.must(t, "up")
	return s
}

// runDir is SOAK_RUN_DIR/name when SOAK_RUN_DIR is set (make soak sets it, so its trap can
// stop the node and the broker if the test binary dies before its cleanups run), else a
// temporary directory.
func runDir(t *testing.T, name string) string {
	t.Helper()
	base := os.Getenv("SOAK_RUN_DIR")
	if base == "" {
		return t.TempDir()
	}
	dir := filepath.Join(base, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("soak: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("soak: %v", err)
	}
	return dir
}

func (s *service) cleanup(t *testing.T, down, log string) {
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(s.runDir(), log)); err == nil {
				lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
				t.Logf("soak: last lines of the %s's log:\n%s", s.name, strings.Join(lines[max(0, len(lines)-20):], "\n"))
			}
		}
		if out, err := s.run(down); err != nil {
			t.Errorf("soak: %s %s: %v\n%s", s.name, down, err, out)
		}
	})
}

func (s *service) runDir() string {
	for _, kv := range s.env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_RUN_DIR") {
			return v
		}
	}
	return ""
}

func (s *service) run(command string, extra ...string) (string, error) {
	cmd := exec.Command(s.script, command)
	cmd.Dir = s.repo
	cmd.Env = append(append([]string(nil), s.env...), extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs a script command, failing the test with its output, and returns how long it took.
func (s *service) must(t *testing.T, command string, extra ...string) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := s.run(command, extra...)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("soak: %s %s: %v\n%s(the soak starts a node and a broker of its own: Java 17 and Maven, or cached jars)", s.name, command, err, out)
	}
	t.Logf("soak: %s %s took %s", s.name, command, took.Round(time.Millisecond))
	return took
}
