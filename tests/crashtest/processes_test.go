//go:build faults

package crashtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

const (
	shareProcesses  = 4
	shareGoroutines = 8
	shareKeyCount   = 300
)

// TestProcessesShareKeys: several OS processes (not goroutines of one) run the same keys
// through the executor at once, each in its own order. Every run of the function inserts a row
// into crash_runs, so the node itself counts the runs: exactly one per key, and that run's id is
// the stored result every process got.
func TestProcessesShareKeys(t *testing.T) {
	n := startNode(t, "127.0.0.73", "group")
	n.applySchema(t, `CREATE TABLE IF NOT EXISTS crash.crash_runs (key text, run uuid, pid int, PRIMARY KEY (key, run))`)
	keys := make([]string, shareKeyCount)
	for i := range keys {
		keys[i] = keyName(i)
	}
	workers := make([]*worker, shareProcesses)
	for p := range workers {
		workers[p] = startWorker(t, workerSpec{Mode: "share", Hosts: n.hosts(), Keys: keys,
			Goroutines: shareGoroutines, Seed: uint64(p + 1), Lease: 10 * time.Second})
	}
	var total workerReport
	for _, w := range workers {
		r := w.next(t, "done", 5*time.Minute)
		assert.Empty(t, r.Errors, "worker %d", w.cmd.Process.Pid)
		total.Ran += r.Ran
		total.Replayed += r.Replayed
		total.Unknown += r.Unknown
		total.InProgress += r.InProgress
		total.Waited += r.Waited
		total.Failed += r.Failed
		total.Transient += r.Transient
		total.Errors = append(total.Errors, r.Errors...)
	}

	s := n.session(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := map[string][]gocql.UUID{}
	iter := s.Query(`SELECT key, run FROM crash_runs`).WithContext(ctx).Iter()
	var key string
	var run gocql.UUID
	for iter.Scan(&key, &run) {
		runs[key] = append(runs[key], run)
	}
	require.NoError(t, iter.Close())

	store, err := lwt.NewStore(s, lwt.IdempotencyKeys(keyspace))
	require.NoError(t, err)
	twice, lost := 0, 0
	for _, k := range keys {
		if len(runs[k]) > 1 {
			twice++
		}
		rec, err := store.Get(ctx, lwt.IdempotencyKey(namespace, k))
		if err != nil || rec.Status != lwt.StatusCompleted || !slices.ContainsFunc(runs[k], func(r gocql.UUID) bool { return string(rec.Result) == r.String() }) {
			lost++
		}
	}
	calls := shareProcesses * shareKeyCount
	results.add(t, result{
		Scenario:     fmt.Sprintf("%d OS processes × %d goroutines, the same %d keys, commitlog group", shareProcesses, shareGoroutines, shareKeyCount),
		Operations:   calls,
		Acknowledged: total.Ran + total.Replayed,
		Lost:         lost,
		Twice:        twice,
		Unknown:      total.Unknown,
		Resolution: fmt.Sprintf("retried by the worker until answered; %d runs recorded in crash_runs for %d keys, %d replays "+
			"(%d calls met another process's live claim and waited for its result; %d runs failed, %d calls timed out and were retried)",
			total.Ran, shareKeyCount, total.Replayed, total.Waited, total.Failed, total.Transient),
	})
	assert.Empty(t, total.Errors)
	assert.Equal(t, calls, total.Ran+total.Replayed, "every call answered")
	assert.Equal(t, shareKeyCount, total.Ran, "runs reported by the processes")
	assert.Len(t, runs, shareKeyCount, "keys with a run in crash_runs")
	// A run whose write failed released its claim and may have written its row all the same:
	// only such a run may be followed by another one.
	assert.LessOrEqual(t, twice, total.Failed, "keys run more than once without a failed run before")
	assert.Zero(t, lost, "keys whose stored result is not their one run")
}
