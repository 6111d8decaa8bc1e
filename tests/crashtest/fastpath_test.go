//go:build faults

package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

const (
	ownerLease, ownerMargin = 3 * time.Second, 1500 * time.Millisecond
	ownerMessages           = 20
	ownerFreezeAt           = 8 // the old owner freezes before the driver sends its 8th record write
)

// ownerScope is the broker partition both owners are assigned, one after the other.
var ownerScope = guard.Scope{Group: "crash-group", Topic: "orders", Partition: 3}

// TestFrozenOwnerBetweenCheckAndWrite: a consumer process that owns a partition on the fast path
// freezes (SIGSTOP, which it sends itself from where the driver picks the host for a record
// write: after the ownership check, before the write is sent) while a new owner, another
// process, is assigned the partition at a newer epoch, takes it on the server, warms up and
// processes every message. The old owner is then resumed (SIGCONT). Its record write was due
// before its lease's deadline, which has passed: it is not sent, so no record of the old owner
// appears after the new owner's warm-up read the table, and no message the old owner reported
// processed runs again. The message it froze on had run its handler and reports a failure: it
// runs again on the new owner, the window every at-least-once consumer has between an effect and
// its record (docs/fastpath.md). Before, the write (whose context was the 10 s commit timeout)
// was sent after the resume and the old owner reported that message processed.
func TestFrozenOwnerBetweenCheckAndWrite(t *testing.T) {
	n := startNode(t, "127.0.0.78", "group")
	n.applySchema(t, `CREATE TABLE IF NOT EXISTS crash.crash_runs (key text, run uuid, pid int, PRIMARY KEY (key, run))`)
	keys := make([]string, ownerMessages)
	for i := range keys {
		keys[i] = keyName(i)
	}
	at := time.Now()
	spec := func(epoch uint64, freeze int) workerSpec {
		return workerSpec{Mode: "owner", Hosts: n.hosts(), Keys: keys, Epoch: epoch, Freeze: freeze, Time: at}
	}
	a := startWorker(t, spec(1, ownerFreezeAt))
	a.next(t, "owned", 2*time.Minute)
	frozenKey := a.next(t, "frozen", time.Minute).Key
	require.Eventually(t, func() bool { return stopped(a.cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond,
		"the old owner stopped itself")
	frozenAt := time.Now()

	b := startWorker(t, spec(2, 0))
	b.next(t, "owned", 2*time.Minute)
	took := time.Since(frozenAt)
	bDone := b.next(t, "done", 2*time.Minute)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	frozen := time.Since(frozenAt)
	aDone := a.next(t, "done", time.Minute)

	s := n.session(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runs := map[string]int{}
	iter := s.Query(`SELECT key FROM crash_runs`).WithContext(ctx).Iter()
	var key string
	for iter.Scan(&key) {
		runs[key]++
	}
	require.NoError(t, iter.Close())
	epochs := map[string]int64{}
	iter = s.Query(`SELECT message_id, epoch FROM processed_messages_bucketed`).WithContext(ctx).Iter()
	var epoch int64
	for iter.Scan(&key, &epoch) {
		epochs[key] = epoch
	}
	require.NoError(t, iter.Close())

	acked, twice, lost, late := 0, 0, 0, 0
	for _, k := range keys {
		for _, out := range []string{aDone.Outcomes[k], bDone.Outcomes[k]} {
			if out == "processed" || out == "duplicate" {
				acked++
			}
		}
		if runs[k] > 1 && aDone.Outcomes[k] == "processed" {
			twice++ // a message the old owner reported processed ran again
		}
		if _, ok := epochs[k]; !ok {
			lost++
		}
		if epochs[k] == 1 && runs[k] > 1 {
			late++ // the old owner's record, written over the new owner's
		}
	}
	results.add(t, result{
		Scenario: fmt.Sprintf("SIGSTOP of a fast-path owner process between its ownership check and its record write (lease %s, margin %s); "+
			"a new owner process takes the partition; SIGCONT", ownerLease, ownerMargin),
		Operations:   2 * ownerMessages,
		Acknowledged: acked,
		Lost:         lost,
		Twice:        twice,
		Resolution: fmt.Sprintf("frozen %s; the new owner owned the partition %s after the freeze; the message the old owner froze on "+
			"(%s) ran %d times, and the resumed owner reported it %s (%q); records of the old owner over the new owner's: %d",
			frozen.Round(time.Millisecond), took.Round(time.Millisecond), frozenKey, runs[frozenKey],
			aDone.Outcomes[frozenKey], aDone.Errs[frozenKey], late),
	})
	assert.Empty(t, bDone.Errors, "the new owner")
	assert.Zero(t, twice, "messages the old owner reported processed that ran again")
	assert.Zero(t, late, "records the old owner wrote after the new owner's")
	assert.Zero(t, lost, "messages without a record")
	assert.Equal(t, "failed", aDone.Outcomes[frozenKey], "the old owner's message whose record was not sent")
	assert.Contains(t, aDone.Errs[frozenKey], "deadline")
	assert.Equal(t, 2, runs[frozenKey], "the message the old owner froze on ran on both owners")
	assert.Equal(t, int64(2), epochs[frozenKey], "its record is the new owner's")
	before := true // the keys the old owner delivered before it froze
	for _, k := range keys {
		assert.Positive(t, runs[k], k)
		if before = before && k != frozenKey; before {
			assert.Equal(t, "processed", aDone.Outcomes[k], k)
			assert.Equal(t, "duplicate", bDone.Outcomes[k], k)
		}
	}
}

// stopped reports whether process pid is stopped by a signal.
func stopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command, which is in parentheses.
	s := string(stat)
	i := strings.LastIndex(s, ")")
	return i >= 0 && len(s) > i+2 && s[i+2] == 'T'
}

// ownScope is the "owner" worker: it owns ownerScope at spec.Epoch on the fast path and
// delivers each key of the spec once, in order (a key refused for want of a lease, or in
// progress, until the broker's redelivery would settle it), reporting each outcome. With
// spec.Freeze set, it stops itself (SIGSTOP) before the driver sends its Freeze-th record write.
func ownScope(spec workerSpec) int {
	out := json.NewEncoder(os.Stdout)
	var writes atomic.Int64
	var last atomic.Value // the key whose handler ran last: the one whose record is written next
	s, err := connectWith(spec.Hosts, keyspace, func(c *gocql.ClusterConfig) {
		testnode.HookSends(c, func(stmt string) {
			if !strings.HasPrefix(stmt, "INSERT") || !strings.Contains(stmt, "processed_messages_bucketed") || strings.Contains(stmt, " IF ") {
				return
			}
			if writes.Add(1) == int64(spec.Freeze) {
				key, _ := last.Load().(string)
				_ = out.Encode(workerReport{Event: "frozen", Key: key})
				stopHere()
			}
		})
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 1
	}
	defer s.Close()
	rep, err := ownAndDeliver(s, spec, out, func(k string) { last.Store(k) })
	if err == nil {
		err = out.Encode(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest worker:", err)
		return 1
	}
	return 0
}

// stopHere stops the process before this goroutine goes on. The SIGSTOP is sent to the calling
// thread (tgkill), which takes it on its way back from the system call: sent to the process
// (kill), another thread may take it a while later, and the write meanwhile goes out.
func stopHere() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// ownAndDeliver owns the scope and delivers the keys; ran is told each key whose handler ran.
func ownAndDeliver(s *gocql.Session, spec workerSpec, out *json.Encoder, ran func(string)) (workerReport, error) {
	g, err := guard.New(s, guard.WithKeyspace(keyspace), guard.WithOwnership(ownerLease, ownerMargin))
	if err != nil {
		return workerReport{}, err
	}
	pre, err := bloom.NewPreCheck("crash", bloom.WithExpectedItems(1000))
	if err != nil {
		return workerReport{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := g.Own(ctx, ownerScope, spec.Epoch, pre); err != nil {
		return workerReport{}, err
	}
	defer g.Disown(ownerScope)
	if err := out.Encode(workerReport{Event: "owned"}); err != nil {
		return workerReport{}, err
	}
	pid := os.Getpid()
	handler := func(ctx context.Context, m guard.Message) error {
		run, err := gocql.RandomUUID()
		if err != nil {
			return err
		}
		if err := s.Query(`INSERT INTO crash_runs (key, run, pid) VALUES (?, ?, ?)`, m.ID, run, pid).WithContext(ctx).Exec(); err != nil {
			return err
		}
		ran(m.ID)
		return nil
	}
	rep := workerReport{Event: "done", Outcomes: map[string]string{}, Errs: map[string]string{}}
	for _, k := range spec.Keys {
		m := guard.Message{Scope: ownerScope, ID: k, Payload: []byte(k), Time: spec.Time}
		for {
			o, err := g.Process(ctx, m, handler)
			rep.Outcomes[k] = strings.ToLower(o.String())
			if err != nil {
				rep.Errs[k] = err.Error()
			}
			if spec.Freeze == 0 && (errors.Is(err, lwt.ErrInProgress) || retryable(err)) && ctx.Err() == nil {
				continue // the new owner: delivered again until settled
			}
			if spec.Freeze == 0 && err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", k, err))
			}
			break
		}
	}
	return rep, nil
}
