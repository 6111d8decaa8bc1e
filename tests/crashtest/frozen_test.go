//go:build faults

package crashtest

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

const frozenLease = 2 * time.Second

// TestFrozenWorkerIsFenced: a worker process frozen with SIGSTOP inside the function, past its
// lease, while another process takes the key over and completes it. Resumed with SIGCONT, the
// frozen worker carries on as if nothing happened: its downstream write, conditioned on its
// fencing token, is rejected, its result is not stored (lwt.ErrLeaseLost), and the stored value
// and the downstream row are the other worker's.
func TestFrozenWorkerIsFenced(t *testing.T) {
	n := startNode(t, "127.0.0.74", "group")
	n.applySchema(t, `CREATE TABLE IF NOT EXISTS crash.crash_ledger (key text PRIMARY KEY, value text, fence bigint)`)
	s := n.session(t)
	const key = "frozen"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The downstream row exists before either worker writes, as an account does before a charge.
	require.NoError(t, s.Query(`INSERT INTO crash_ledger (key, value, fence) VALUES (?, '', 0)`, key).WithContext(ctx).Exec())

	a := startWorker(t, workerSpec{Mode: "fenced", Hosts: n.hosts(), Keys: []string{key}, Lease: frozenLease, Value: "A", Hold: true})
	aRunning := a.next(t, "running", 2*time.Minute)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	frozenAt := time.Now()

	b := startWorker(t, workerSpec{Mode: "fenced", Hosts: n.hosts(), Keys: []string{key}, Lease: frozenLease, Value: "B"})
	bRunning := b.next(t, "running", time.Minute)
	takeover := time.Since(frozenAt)
	bDone := b.next(t, "done", time.Minute)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	frozen := time.Since(frozenAt)
	_, err := io.WriteString(a.stdin, "go\n")
	require.NoError(t, err)
	aDone := a.next(t, "done", time.Minute)

	store, err := lwt.NewStore(s, lwt.IdempotencyKeys(keyspace))
	require.NoError(t, err)
	rec, err := store.Get(ctx, lwt.IdempotencyKey(namespace, key))
	require.NoError(t, err)
	var value string
	var fence int64
	require.NoError(t, s.Query(`SELECT value, fence FROM crash_ledger WHERE key = ?`, key).WithContext(ctx).Scan(&value, &fence))

	results.add(t, result{
		Scenario:     fmt.Sprintf("SIGSTOP of a worker process inside the function past its %s lease; SIGCONT after another process took over", frozenLease),
		Operations:   2,
		Acknowledged: btoi(bDone.Err == ""),
		Lost:         btoi(rec.Status != lwt.StatusCompleted || string(rec.Result) != "B"),
		Twice:        btoi(aDone.Ran == 1 && bDone.Ran == 1),
		Resolution: fmt.Sprintf("frozen %s; taken over after %s (fence %d → %d); the resumed worker got %q, its fenced write applied: %v; "+
			"stored result %q, downstream row %q (fence %d)", frozen.Round(time.Millisecond), takeover.Round(time.Millisecond),
			aRunning.Fence, bRunning.Fence, aDone.Err, aDone.Downstream, rec.Result, value, fence),
	})
	assert.Greater(t, bRunning.Fence, aRunning.Fence, "the takeover's fence")
	assert.Empty(t, bDone.Err, "the worker that took over")
	assert.True(t, bDone.Downstream, "the downstream write of the worker that took over")
	assert.True(t, aDone.LeaseLost, "the resumed worker's error: %s", aDone.Err)
	assert.False(t, aDone.Downstream, "the resumed worker's downstream write must be fenced off")
	assert.Equal(t, lwt.StatusCompleted, rec.Status)
	assert.Equal(t, "B", string(rec.Result))
	assert.Equal(t, bRunning.Fence, rec.Fence)
	assert.Equal(t, "B", value)
	assert.Equal(t, bRunning.Fence, fence)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
