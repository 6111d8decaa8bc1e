package bench

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestSmokeAgainstNode runs the command end to end against the test node, briefly: every
// operation of the catalog (the toolkit's included, whose wrong answers count as errors) must
// record answers in every phase with no failure, the node's configuration must be read, the
// three files must be written and the keyspace dropped.
func TestSmokeAgainstNode(t *testing.T) {
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	out := t.TempDir()
	args := []string{
		"-hosts", strings.Join(hosts, ","), "-warmup", "500ms", "-duration", "1500ms",
		"-concurrency", "1,4", "-rate", "60", "-open-workers", "4", "-quiet", "-out", out,
		"-timeout", "15s", // a shared two-core test machine can stall a request for seconds
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, Run(ctx, args, noEnv, &stdout, &stderr), "stderr: %s", stderr.String())

	jsons, _ := filepath.Glob(filepath.Join(out, "lwtbench-*.json"))
	pngs, _ := filepath.Glob(filepath.Join(out, "lwtbench-*.png"))
	require.Len(t, jsons, 1)
	require.Len(t, pngs, 1)
	f, err := os.Open(jsons[0])
	require.NoError(t, err)
	defer f.Close()
	r, err := ReadJSON(f)
	require.NoError(t, err)

	assert.True(t, strings.HasPrefix(r.Node.CassandraVersion, "5."), r.Node.CassandraVersion)
	assert.Contains(t, []string{"v1", "v2"}, r.Node.PaxosVariant)
	assert.NotEqual(t, unknown, r.Node.CommitlogSync)
	assert.Equal(t, "SimpleStrategy replication_factor=1", r.Node.Replication)
	assert.Equal(t, "QUORUM", r.Client.Consistency)
	assert.Equal(t, "SERIAL", r.Client.Serial)

	require.Equal(t, OpNames(Catalog()), opInfoNames(r.Operations), "every operation runs by default")
	require.Len(t, r.Phases, 3, "two closed-loop levels and the open loop; the warm-up is discarded")
	for _, p := range r.Phases {
		require.Equal(t, OpNames(Catalog()), summaryNames(p.Operations), p.Label())
		for _, s := range p.Operations {
			assert.Positive(t, s.Requests, "%s %s", p.Label(), s.Op)
			assert.Zero(t, s.Errors+s.Timeouts+s.Unsent, "%s %s: %s", p.Label(), s.Op, s.FirstError)
			assert.Positive(t, s.P50Ms)
			assert.LessOrEqual(t, s.P50Ms, s.P99Ms)
			assert.LessOrEqual(t, s.P99Ms, s.MaxMs)
			assert.Positive(t, s.RatioP50)
		}
	}
	for _, want := range append([]string{"closed loop, concurrency 4", "open loop, 60 req/s"}, OpNames(Catalog())...) {
		assert.Contains(t, stdout.String(), want)
	}

	img, err := os.Open(pngs[0])
	require.NoError(t, err)
	defer img.Close()
	_, err = png.Decode(img)
	assert.NoError(t, err)

	admin := testnode.Cluster(t)
	s, err := admin.CreateSession()
	require.NoError(t, err)
	defer s.Close()
	exists, err := keyspaceExists(ctx, s, r.Keyspace)
	require.NoError(t, err)
	assert.False(t, exists, "keyspace %s is dropped after the run", r.Keyspace)
}

func opInfoNames(infos []OpInfo) []string {
	names := make([]string, len(infos))
	for i, o := range infos {
		names[i] = o.Name
	}
	return names
}

func summaryNames(sums []Summary) []string {
	names := make([]string, len(sums))
	for i, s := range sums {
		names[i] = s.Op
	}
	return names
}
