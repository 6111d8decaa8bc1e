package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

func envWith(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestParseFlagsDefaults(t *testing.T) {
	c, err := ParseFlags(nil, noEnv, Catalog())
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:9042"}, c.Hosts)
	assert.Equal(t, gocql.Quorum, c.Consistency)
	assert.Equal(t, gocql.Serial, c.Serial)
	assert.Equal(t, []int{1, 4, 16}, c.Concurrency)
	assert.Equal(t, OpNames(Catalog()), c.Ops)
	assert.Equal(t, "out", c.OutDir)
	assert.Empty(t, c.Keyspace, "an empty keyspace means a unique one per run")

	// The default run must stay near a minute: warm-up plus every phase.
	var total time.Duration
	for _, p := range c.phases() {
		total += p.duration
	}
	assert.LessOrEqual(t, total, 70*time.Second)
	assert.GreaterOrEqual(t, total, 30*time.Second)
}

func TestParseFlagsHostsFromEnvironment(t *testing.T) {
	c, err := ParseFlags(nil, envWith(map[string]string{"CASSANDRA_HOSTS": " 10.0.0.1:9042, 10.0.0.2 "}), Catalog())
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:9042", "10.0.0.2"}, c.Hosts)

	c, err = ParseFlags([]string{"-hosts", "h1"}, envWith(map[string]string{"CASSANDRA_HOSTS": "h2"}), Catalog())
	require.NoError(t, err)
	assert.Equal(t, []string{"h1"}, c.Hosts, "the flag wins over the environment")
}

func TestParseFlagsLongPresetKeepsExplicitFlags(t *testing.T) {
	c, err := ParseFlags([]string{"-long"}, noEnv, Catalog())
	require.NoError(t, err)
	long := presetFor(true)
	assert.Equal(t, long.warmup, c.Warmup)
	assert.Equal(t, long.duration, c.Duration)
	assert.Equal(t, []int{1, 4, 16, 64}, c.Concurrency)

	c, err = ParseFlags([]string{"-long", "-duration", "7s", "-concurrency", "2"}, noEnv, Catalog())
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, c.Duration)
	assert.Equal(t, []int{2}, c.Concurrency)
	assert.Equal(t, long.warmup, c.Warmup)
}

func TestParseFlagsSettings(t *testing.T) {
	c, err := ParseFlags([]string{
		"-consistency", "local_quorum", "-serial", "LOCAL_SERIAL", "-dc-rf", "dc1:3,dc2:2", "-local-dc", "dc1",
		"-ops", "lwt-dup,insert", "-rate", "0", "-keyspace", "bench_ks", "-keep-keyspace", "-driver-defaults",
	}, noEnv, Catalog())
	require.NoError(t, err)
	assert.True(t, c.DriverDefaults)
	assert.Equal(t, gocql.LocalQuorum, c.Consistency)
	assert.Equal(t, gocql.LocalSerial, c.Serial)
	assert.Equal(t, map[string]int{"dc1": 3, "dc2": 2}, c.DatacenterRF)
	assert.Equal(t, []string{"lwt-dup", "insert"}, c.Ops)
	assert.Equal(t, "bench_ks", c.Keyspace)
	assert.True(t, c.KeepKeyspace)
	for _, p := range c.phases() {
		assert.NotEqual(t, ModeOpen, p.mode, "-rate 0 turns the open loop off")
	}
}

func TestParseFlagsRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-concurrency", "1,x"},
		{"-concurrency", "0"},
		{"-rate", "-5"},
		{"-duration", "0s"},
		{"-duration", "soon"},
		{"-warmup", "-1s"},
		{"-serial", "QUORUM"},
		{"-serial", "LOCAL_SERIAL"}, // local to each request's coordinator without -local-dc
		{"-consistency", "ANY"},
		{"-consistency", "MOST"},
		{"-ops", "insert,nope"},
		{"-ops", "insert,insert"},
		{"-ops", ""},
		{"-keyspace", "1bad-name"},
		{"-rf", "0"},
		{"-rf", "3", "-dc-rf", "dc1:3"},
		{"-dc-rf", "dc1"},
		{"-hosts", " , "},
		{"-open-workers", "0"},
		{"-concurrency", "", "-rate", "0"},
		{"-timeout", "0s"},
		{"-hot-counter", "-hot-rate", "-1"},
		{"-hot-counter", "-hot-rate", "2e6"},
		{"-no-such-flag"},
		{"stray"},
	} {
		_, err := ParseFlags(args, noEnv, Catalog())
		var usage *UsageError
		if assert.ErrorAs(t, err, &usage, "args %q", args) {
			assert.Equal(t, 2, ExitCode(err))
			assert.NotContains(t, err.Error(), "\n", "args %q", args)
		}
	}
}

func TestParseFlagsHelp(t *testing.T) {
	_, err := ParseFlags([]string{"-h"}, noEnv, Catalog())
	assert.ErrorIs(t, err, flag.ErrHelp)

	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), []string{"-h"}, noEnv, &out, &out))
	for _, want := range []string{"-concurrency", "-rate", "-long"} {
		assert.Contains(t, out.String(), want)
	}
	for _, s := range Catalog() {
		assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(s.Name)+` +`+regexp.QuoteMeta(s.Description)+`$`, out.String(),
			"every operation is listed with its description")
	}
}

func TestRunBadFlagIsOneLineExitTwo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), []string{"-rate", "fast"}, noEnv, &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, 2, ExitCode(err))
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "-rate")
	assert.Empty(t, stdout.String())
}

func TestRunUnreachableClusterIsOneLineExitOne(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	// Port 1 on loopback refuses at once; nothing listens there.
	err := Run(context.Background(), []string{"-hosts", "127.0.0.1:1", "-connect-timeout", "1s", "-quiet"},
		noEnv, &stdout, &stderr)
	require.Error(t, err)
	assert.Equal(t, 1, ExitCode(err))
	var ce *ConnectError
	assert.True(t, errors.As(err, &ce))
	assert.Contains(t, err.Error(), "cannot reach Cassandra at 127.0.0.1:1")
	assert.NotContains(t, err.Error(), "\n")
	assert.Less(t, time.Since(start), 15*time.Second)
	assert.Empty(t, stdout.String())
	assert.False(t, strings.Contains(stderr.String(), "gocql:"), "driver log stays off without -v")
}
