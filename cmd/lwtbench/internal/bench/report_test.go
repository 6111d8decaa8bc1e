package bench

import (
	"bytes"
	"errors"
	"image/png"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleReport builds a report the way a run does, from recorded latencies: the insert takes
// 1-2 ms, lwt-new twice that, and "broken" only fails.
func sampleReport(t *testing.T) *Report {
	t.Helper()
	phase := func(mode string, workers int) PhaseResult {
		stats := map[string]*opStats{Baseline: newOpStats(), "lwt-new": newOpStats(), "broken": newOpStats()}
		for i := range 1000 {
			lat := time.Millisecond + time.Duration(i)*time.Microsecond
			stats[Baseline].record(lat, nil)
			stats["lwt-new"].record(2*lat, nil)
		}
		stats["broken"].record(time.Second, &gocql.RequestErrWriteTimeout{WriteType: "CAS"})
		stats["broken"].record(time.Second, errors.New("broken:\nno luck"))
		p := PhaseResult{Mode: mode, Workers: workers, DurationS: 10, ElapsedS: 10, LatencyFrom: "send"}
		for _, name := range []string{Baseline, "lwt-new", "broken"} {
			s := summarize(name, stats[name], 10*time.Second)
			p.Throughput += s.Throughput
			p.Operations = append(p.Operations, s)
		}
		setRatios(p.Operations, Baseline)
		return p
	}
	open := phase(ModeOpen, 32)
	open.RatePerS, open.LatencyFrom = 200, "intended start"
	return &Report{
		Tool: "lwtbench", Started: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), Keyspace: "lwtbench_x",
		RunID: "x", Baseline: Baseline,
		Node: NodeConfig{CassandraVersion: "5.0.9", PaxosVariant: "v2", PaxosStatePurging: "legacy",
			CommitlogSync: "periodic", CommitlogSyncPeriod: "10000ms", Nodes: 1,
			Replication: "SimpleStrategy replication_factor=1"},
		Client: ClientConfig{Driver: "github.com/gocql/gocql v1.7.0", Consistency: "QUORUM",
			Serial: "SERIAL", RequestTimeout: "5s", Concurrency: []int{4}, Rate: 200},
		Operations: []OpInfo{{Name: Baseline, Description: "plain"}},
		Phases:     []PhaseResult{phase(ModeClosed, 4), open},
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, sampleReport(t)))
	out := b.String()
	for _, want := range []string{
		"Cassandra 5.0.9, paxos v2 (state purging legacy), commitlog periodic 10000ms",
		"consistency QUORUM, serial SERIAL",
		"closed loop, concurrency 4", "open loop, 200 req/s, 32 workers", "latency from intended start",
		"p50", "p99.9", "errors", "timeouts",
		"broken, first failure: broken: no luck", // one line, whatever the error's text
	} {
		assert.Contains(t, out, want)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 14 && f[0] == "lwt-new" {
			rows++
			assert.Equal(t, "2.00", f[9], "p50 ratio to insert: %q", line)
			assert.Equal(t, "2.00", f[10], "p99 ratio to insert: %q", line)
		}
		if len(f) == 14 && f[0] == "broken" {
			assert.Equal(t, []string{"0", "0", "0", "-", "-", "-", "-", "-", "-", "-", "1", "1", "0"}, f[1:], "%q", line)
		}
	}
	assert.Equal(t, 2, rows, "one lwt-new row per phase")
	assert.NotContains(t, out, "WARNING")

	r := sampleReport(t)
	r.Node.SkipSync = true
	b.Reset()
	require.NoError(t, WriteTable(&b, r))
	assert.Contains(t, b.String(), "WARNING: the node runs with cassandra.skip_sync=true")
}

func TestJSONRoundTrip(t *testing.T) {
	r := sampleReport(t)
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r))
	assert.Contains(t, b.String(), `"p99_9_ms"`)
	assert.Contains(t, b.String(), `"paxos_variant": "v2"`)
	back, err := ReadJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestWriteChartIsADecodablePNG(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteChart(&b, sampleReport(t)))
	img, err := png.Decode(&b)
	require.NoError(t, err)
	size := img.Bounds().Size()
	assert.Greater(t, size.X, 400)
	assert.Greater(t, size.Y, size.X/2, "two stacked panels")

	assert.Error(t, WriteChart(&b, &Report{}), "no phase, no chart")
}

func TestLogTicksLabelOneTwoFive(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks125{}).Ticks(2.7, 60) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"5", "10", "20", "50"}, labels)
	assert.Empty(t, (logTicks125{}).Ticks(0, 1))
}

func TestFormatReplication(t *testing.T) {
	assert.Equal(t, "SimpleStrategy replication_factor=3",
		formatReplication(map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "3"}))
	assert.Equal(t, "NetworkTopologyStrategy dc1=3 dc2=3",
		formatReplication(map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc2": "3", "dc1": "3"}))
}

func TestDriverVersionFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "github.com/other/mod", Version: "v0.1.0"},
		{Path: "github.com/gocql/gocql", Version: "v1.7.0"},
	}}
	assert.Equal(t, "github.com/gocql/gocql v1.7.0", driverVersionFrom(info, true))

	info.Deps[1].Replace = &debug.Module{Path: "github.com/apache/cassandra-gocql-driver", Version: "v1.8.0"}
	assert.Equal(t, "github.com/gocql/gocql v1.7.0 => github.com/apache/cassandra-gocql-driver v1.8.0",
		driverVersionFrom(info, true))

	assert.Equal(t, "github.com/gocql/gocql unknown", driverVersionFrom(nil, false))
	assert.Equal(t, "github.com/gocql/gocql unknown", driverVersionFrom(&debug.BuildInfo{}, true))
}
