package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestHotCounterSmoke runs -hot-counter end to end against the test node, briefly: both cases
// must acknowledge events, read totals while writing, count partitions, find every total exact
// and write the JSON (with the fields docs/benchmarks.md quotes), the table and the chart.
func TestHotCounterSmoke(t *testing.T) {
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	out := t.TempDir()
	args := []string{"-hot-counter", "-hosts", strings.Join(hosts, ","), "-duration", "2s", "-warmup", "1s", "-writers", "4",
		"-counters", "20", "-quiet", "-out", out, "-timeout", "15s"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, Run(ctx, args, noEnv, &stdout, &stderr), "stderr: %s", stderr.String())

	jsons, _ := filepath.Glob(filepath.Join(out, "lwtbench-*.json"))
	pngs, _ := filepath.Glob(filepath.Join(out, "lwtbench-*.png"))
	require.Len(t, jsons, 1)
	require.Len(t, pngs, 1)
	raw, err := os.ReadFile(jsons[0])
	require.NoError(t, err)
	for _, field := range []string{"events_per_s", "total_p50_ms", "total_p99_ms", "max_partition_rows",
		"max_partition_rows_projected_1h_10k", "total_exact", "writes_per_event", "parts_summed_per_total", "width_switches"} {
		assert.Contains(t, string(raw), `"`+field+`"`)
	}
	r, err := ReadJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Len(t, r.HotCounter, 2)
	require.Len(t, r.Phases, 2)
	for _, hc := range r.HotCounter {
		assert.Positive(t, hc.Events, hc.Name)
		assert.Positive(t, hc.TotalReads, hc.Name)
		assert.Positive(t, hc.MaxPartitionRows, hc.Name)
		assert.Positive(t, hc.MaxIndexRows, hc.Name)
		assert.GreaterOrEqual(t, hc.RowsPerWrite, 1.0, hc.Name)
		assert.Positive(t, hc.PartsSummedPerTotal, hc.Name)
		// Every event is one row of a write, plus its share of index rows and the counter's start.
		assert.GreaterOrEqual(t, hc.WritesPerEvent, 1/hc.RowsPerWrite, hc.Name)
		assert.Positive(t, hc.WritesPerEvent, hc.Name)
		assert.True(t, hc.TotalExact, "%s: %d of %d wrong, %d unconfirmed, %s", hc.Name, hc.CountersWrong,
			hc.CountersChecked, hc.Unconfirmed, hc.FirstError)
	}
	assert.Equal(t, 20, r.HotCounter[1].Counters)
	assert.Contains(t, stdout.String(), "one hot counter")
	assert.Contains(t, stdout.String(), "20 counters at once")
}

// TestHotCounterCasesCountApart runs -hot-counter with -counters 1: the second case counts on a
// counter of its own, so both totals are exact (they shared one counter once, and the second
// case's total was off by the first case's events).
func TestHotCounterCasesCountApart(t *testing.T) {
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	args := []string{"-hot-counter", "-hosts", strings.Join(hosts, ","), "-duration", "1s", "-warmup", "0", "-writers", "2",
		"-counters", "1", "-quiet", "-out", t.TempDir(), "-timeout", "15s"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, Run(ctx, args, noEnv, &stdout, &stderr), "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "one hot counter: ")
	assert.Equal(t, 2, strings.Count(stdout.String(), "exact true (0 of 1 counters wrong)"), stdout.String())
}
