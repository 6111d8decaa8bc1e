package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// peersEnv is the environment `make test` gives the peers: a Postgres and a Redis with
// appendfsync always (scripts/peers). A missing one fails the test.
func peersEnv(t *testing.T) (pgURL, redisAddr string) {
	t.Helper()
	pgURL, redisAddr = os.Getenv("PEERS_POSTGRES_URL"), os.Getenv("PEERS_REDIS_ADDR")
	if pgURL == "" || redisAddr == "" {
		t.Fatal("PEERS_POSTGRES_URL or PEERS_REDIS_ADDR is unset: run make test (or scripts/peers/*.sh up and export them)")
	}
	return pgURL, redisAddr
}

// TestPeersRun runs -peers end to end, briefly, against the test node and the peers' servers:
// every operation answers as it should in every phase (a wrong answer is an error), and the JSON
// holds one entry per (store, operation, workers) with its durability and replication.
func TestPeersRun(t *testing.T) {
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	pgURL, redisAddr := peersEnv(t)
	ops := []string{"insert", "once-new", "once-dup-node", "once-new-outbox", "pg-insert", "pg-once-new", "pg-once-dup",
		"pg-once-outbox", "pg-outbox", "redis-always-set", "redis-always-once-new", "redis-always-once-dup"}
	out := t.TempDir()
	args := []string{"-peers", "-hosts", strings.Join(hosts, ","), "-postgres", pgURL, "-redis-always", redisAddr,
		"-ops", strings.Join(ops, ","), "-warmup", "300ms", "-duration", "1s", "-concurrency", "1,4", "-quiet",
		"-out", out, "-timeout", "15s"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, Run(ctx, args, noEnv, &stdout, &stderr), "stderr: %s", stderr.String())

	jsons, _ := filepath.Glob(filepath.Join(out, "lwtbench-peers-*.json"))
	require.Len(t, jsons, 1)
	f, err := os.Open(jsons[0])
	require.NoError(t, err)
	defer f.Close()
	r, err := ReadJSON(f)
	require.NoError(t, err)

	require.Len(t, r.Stores, 3, "cassandra, postgres, redis-always")
	require.Len(t, r.Entries, len(ops)*2)
	baselines := map[string]string{"cassandra": "insert", "postgres": "pg-insert", "redis": "redis-always-set"}
	for _, e := range r.Entries {
		name := fmt.Sprintf("%s at %d workers", e.Operation, e.Workers)
		assert.Contains(t, []int{1, 4}, e.Workers)
		assert.Positive(t, e.Requests, name)
		assert.Zero(t, e.Errors+e.Timeouts, name)
		assert.Positive(t, e.P50Ms, name)
		assert.LessOrEqual(t, e.P50Ms, e.P99Ms, name)
		assert.Positive(t, e.ReqPerS, name)
		assert.Positive(t, e.RatioP50, name)
		assert.Equal(t, baselines[e.Store], e.Baseline, name)
		assert.NotEmpty(t, e.Durability, name)
		assert.NotEmpty(t, e.Replication, name)
	}
	assert.Contains(t, stdout.String(), "ours/theirs, exactly once, new key (once-new); pg-once-new p50")
	pngs, _ := filepath.Glob(filepath.Join(out, "lwtbench-peers-*.png"))
	assert.Len(t, pngs, 1)
}

func TestPeersFlags(t *testing.T) {
	c, err := ParseFlags([]string{"-peers", "-postgres", "postgres://x", "-redis-always", "a:1", "-redis-everysec", "b:2"}, noEnv, Catalog())
	require.NoError(t, err)
	assert.Equal(t, OpNames(PeersCatalog()), c.Ops, "every peers operation by default")
	assert.Equal(t, []int{1, 16, 64}, c.Concurrency)
	assert.Zero(t, c.Rate, "no open loop by default")

	_, err = ParseFlags([]string{"-peers", "-redis-always", "a:1", "-redis-everysec", "b:2"}, noEnv, Catalog())
	var usage *UsageError
	require.ErrorAs(t, err, &usage, "a Postgres operation without -postgres")
	assert.Contains(t, err.Error(), "-postgres")

	_, err = ParseFlags([]string{"-peers", "-ops", "insert,pg-insert", "-postgres", "postgres://x"}, noEnv, Catalog())
	assert.NoError(t, err, "only the servers of the selected operations are needed")

	_, err = ParseFlags([]string{"-ops", "pg-insert"}, noEnv, Catalog())
	assert.ErrorAs(t, err, &usage, "peers operations need -peers")
}
