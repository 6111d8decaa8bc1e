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

	"github.com/cassdedup/cassdedup/cassandratest"
)

// TestMain lets run start this test binary as a consumer process.
func TestMain(m *testing.M) {
	if os.Getenv(consumerEnv) != "" {
		os.Exit(consumerMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func kafkaBrokers(t *testing.T) []string {
	t.Helper()
	b := os.Getenv("KAFKA_BROKERS")
	if b == "" {
		t.Fatal("no Kafka: KAFKA_BROKERS is unset; run `make kafka-up` and set KAFKA_BROKERS=127.0.0.1:19092 (make test does both)")
	}
	return strings.Split(b, ",")
}

// TestRunEveryPaymentTakesEffectOnceAcrossAKill runs the example on the real broker and node
// with 3,000 payments, 300 of them produced twice: one of the two consumers is killed with
// SIGKILL inside a handler of a poll whose claims it holds, the group rebalances, and the
// survivor takes the dead consumer's claims over once Cassandra has expired their leases.
func TestRunEveryPaymentTakesEffectOnceAcrossAKill(t *testing.T) {
	brokers := kafkaBrokers(t)
	session, ks := cassandratest.NewSession(t)
	hosts, err := cassandratest.Hosts()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg := runConfig{brokers: brokers, hosts: strings.Join(hosts, ","), keyspace: ks, messages: 3000,
		spawn: func(args []string) *exec.Cmd { return exec.Command(os.Args[0], args...) }}
	s, err := run(ctx, session, cfg, &out)
	t.Log(out.String())
	require.NoError(t, err)
	assert.Equal(t, 3300, s.records, "3,000 payments and 300 producer duplicates")
	assert.Equal(t, 300, s.duplicates)
	assert.Equal(t, 3000, s.applied, "effects = distinct payments")
	assert.Positive(t, s.takeovers, "the survivor took over the dead consumer's unfinished claims")
	assert.GreaterOrEqual(t, s.rerun, 4, "the claims of the dead consumer's stalled poll were taken over")
	assert.EqualValues(t, s.distinct+3, s.runs,
		"every handler ran once, except the three that ran in the dead consumer's unfinished poll and ran again after the takeover")
	assert.Greater(t, s.polled, int64(3300/2), "the survivor consumed its own partitions and the dead consumer's")
}
