//go:build faults

package crashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// broker is a Kafka broker a test started with scripts/kafka/broker.sh, on a loopback address
// and ports of its own: never the development broker nor the one `make test` starts.
type broker struct {
	addr             string
	port, controller int
	runDir, repo     string
}

// startBroker starts a fresh broker on addr:port (its controller on port+1) and stops it,
// removing its data, when the test ends; on failure it first logs the end of the broker's log.
func startBroker(t *testing.T, addr string, port int) *broker {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatalf("crashtest: repository root: %v", err)
	}
	b := &broker{addr: addr, port: port, controller: port + 1, runDir: t.TempDir(), repo: repo}
	stopped := startReaper(t, b.scriptPath(), b.repo, b.env(false))
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(b.runDir, "logs", "kafka.log")); err == nil {
				t.Logf("crashtest: last lines of the broker's log:\n%s", tail(string(log), 30))
			}
		}
		if out, err := runScript(b.scriptPath(), b.repo, b.env(false), "down"); err != nil {
			t.Errorf("crashtest: broker.sh down on %s: %v\n%s", b.hosts(), err, out)
		}
		stopped()
	})
	b.mustScript(t, "up", false)
	return b
}

func (b *broker) scriptPath() string { return filepath.Join(b.repo, "scripts", "kafka", "broker.sh") }

func (b *broker) hosts() string { return fmt.Sprintf("%s:%d", b.addr, b.port) }

// env is the test's environment with every KAFKA_ setting replaced by this broker's.
func (b *broker) env(keepData bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_") {
			env = append(env, kv)
		}
	}
	env = append(env, "KAFKA_ADDRESS="+b.addr, fmt.Sprintf("KAFKA_PORT=%d", b.port),
		fmt.Sprintf("KAFKA_CONTROLLER_PORT=%d", b.controller), "KAFKA_RUN_DIR="+b.runDir)
	if keepData {
		env = append(env, "KAFKA_KEEP_DATA=1")
	}
	return env
}

// mustScript runs a broker.sh subcommand and fails the test, with the script's output, if it
// fails: a missing Java or Maven is reported here.
func (b *broker) mustScript(t *testing.T, command string, keepData bool) time.Duration {
	t.Helper()
	start := time.Now()
	out, err := runScript(b.scriptPath(), b.repo, b.env(keepData), command)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("crashtest: broker.sh %s on %s: %v\n%s(the outbox crash tests start a broker of their own, "+
			"so they need Java 17 and Maven or cached jars; KAFKA_BROKERS does not replace it)", command, b.hosts(), err, out)
	}
	t.Logf("crashtest: broker.sh %s on %s took %s", command, b.hosts(), took.Round(time.Millisecond))
	return took
}

// stop stops the broker (SIGTERM, as a rolling restart does), keeping its data for start.
func (b *broker) stop(t *testing.T) {
	t.Helper()
	b.mustScript(t, "down", true)
}

// start starts the broker again on the data stop kept.
func (b *broker) start(t *testing.T) {
	t.Helper()
	b.mustScript(t, "up", true)
}
