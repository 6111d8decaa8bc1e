package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestMain lets run start this test binary as a consumer process.
func TestMain(m *testing.M) {
	if os.Getenv(consumerEnv) != "" {
		os.Exit(consumerMain(os.Args[1:]))
	}
	leakcheck.Main(m) // the test binary's own goroutines must not outlive the tests
}

// TestRunEveryPaymentTakesEffectOnceAcrossAKill runs the example on the real broker and node
// with 3,000 payments, 300 of them produced twice: one of the two consumers is killed with
// SIGKILL inside a handler of a poll whose claims it holds, the group rebalances, and the
// survivor takes the dead consumer's claims over once Cassandra has expired their leases.
func TestRunEveryPaymentTakesEffectOnceAcrossAKill(t *testing.T) {
	s := runExample(t, false)
	assert.Positive(t, s.redelivered+s.takeovers, "the survivor saw the dead consumer's messages again")
	assert.Positive(t, s.takeovers, "the survivor took over the dead consumer's unfinished claims")
	assert.Positive(t, s.rerun, "effects of taken-over claims carry the survivor's fence")
}

// TestRunBloomFastPath is the same run with the Bloom fast path owned per assigned partition
// (epoch = group generation, fenced on the server): the survivor waits out the dead member's
// ownership lease, then runs again the handlers of its unfinished poll, which recorded nothing
// (a poll's fast-path records are written after its handlers), and finds the rest recorded.
func TestRunBloomFastPath(t *testing.T) {
	s := runExample(t, true)
	assert.Zero(t, s.takeovers, "the fast path makes no claims to take over")
	assert.Greater(t, s.runs, int64(s.distinct), "the survivor ran the dead consumer's unfinished poll again")
}

// runExample runs the example with 3,000 payments and checks what every run must show.
func runExample(t *testing.T, useBloom bool) summary {
	t.Helper()
	brokers := testnode.KafkaBrokers(t)
	session, ks := testnode.NewSession(t)
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg := runConfig{brokers: brokers, hosts: strings.Join(hosts, ","), keyspace: ks, messages: 3000, bloom: useBloom,
		spawn: func(args []string) *exec.Cmd { return exec.Command(os.Args[0], args...) }}
	s, err := run(ctx, session, cfg, &out)
	t.Log(out.String())
	require.NoError(t, err)
	assert.Equal(t, 3300, s.records, "3,000 payments and 300 producer duplicates")
	assert.Equal(t, 300, s.duplicates)
	assert.Equal(t, 3000, s.applied, "effects = distinct payments")
	assert.GreaterOrEqual(t, s.runs, int64(s.distinct), "every payment's handler ran")
	assert.LessOrEqual(t, s.runs, int64(s.distinct+3+handlersAtOnce),
		"no handler ran twice, except those that ran in the dead consumer's unfinished poll: three, and those running beside the stalled one")
	assert.Greater(t, s.polled, int64(3300/2), "the survivor consumed its own partitions and the dead consumer's")
	return s
}
