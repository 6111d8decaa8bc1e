//go:build faults

package crashtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
)

// The kill scenarios: 16 workers take new keys, each through lwt's executor, the event log and
// the counters, until killAfter executor calls have been acknowledged; then the node gets
// SIGKILL and is restarted on its data.
const (
	killKeys    = 2000
	killWorkers = 16
	killAfter   = 600
	killLease   = 3 * time.Second // short, so retries take over the claims the kill left behind
	namespace   = "crash"
)

// TestKillGroupCommitlog: on a node whose commitlog is fsynced before a write is acknowledged,
// a SIGKILL loses nothing that was acknowledged. Every acknowledged key keeps its result and its
// retry replays it without running the function; the event log's totals and the counters'
// repair listing are exact after the restart.
func TestKillGroupCommitlog(t *testing.T) {
	w := runKill(t, "127.0.0.71", "group")
	c := w.check(t)
	c.report(t, "SIGKILL + restart, commitlog group")
	assert.Zero(t, c.once.lost, "acknowledged results lost")
	assert.Zero(t, c.once.twice, "acknowledged keys whose retry ran the function")
	assert.Zero(t, c.events.lost, "acknowledged events lost")
	assert.Zero(t, c.counters.lost, "acknowledged increments lost")
	assert.Zero(t, c.counters.twice, "operations counted twice")
}

// TestKillPeriodicCommitlog: the same on a node whose commitlog is fsynced every 10 s (the
// default). A SIGKILL loses the acknowledged writes since the last sync; the test measures the
// loss and checks that every acknowledged effect is accounted for as kept or lost, and that a
// lost result is exactly a key whose retry ran the function again.
func TestKillPeriodicCommitlog(t *testing.T) {
	w := runKill(t, "127.0.0.72", "periodic")
	c := w.check(t)
	c.report(t, "SIGKILL + restart, commitlog periodic 10 s")
	assert.Equal(t, c.once.lost, c.once.twice, "every lost result, and only those, ran again on retry")
}

// keyCalls is what the calls made for one key before the kill returned. Each entry is written by
// the one worker that took the key, and read after the workers ended.
type keyCalls struct {
	started  bool
	result   []byte // the executor's acknowledged result; nil when the call failed
	onceErr  error
	eventErr error // nil: the event was acknowledged
	incr     counters.Outcome
	incrErr  error
	// when each call returned, to tell how long before the kill a lost acknowledgement came
	onceAt, eventAt, incrAt time.Time
}

type killWorkload struct {
	node *node
	t0   time.Time // every event's time: all of them fall in one bucket
	// node.sh kill ran from killing to killed; the SIGKILL landed in between
	killing, killed time.Time
	keys            []keyCalls
	runs            []atomic.Int32 // function runs per key, before and after the kill
}

func keyName(i int) string     { return fmt.Sprintf("k%05d", i) }
func counterName(i int) string { return "crash-" + keyName(i) }

// fn is the function the executor runs for key i: it counts the run and returns a result that
// names it, so a second run would store a different value.
func (w *killWorkload) fn(i int) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		run := w.runs[i].Add(1)
		return fmt.Appendf(nil, "%s run %d", keyName(i), run), nil
	}
}

// stores are the three primitives under test, on one session.
type stores struct {
	once *lwt.Store
	log  *events.Log
	ctr  *counters.Store
}

func newStores(t *testing.T, s *gocql.Session) stores {
	t.Helper()
	once, err := lwt.NewStore(s, lwt.IdempotencyKeys(keyspace), lwt.WithLease(killLease),
		lwt.WithCommitTimeout(5*time.Second))
	require.NoError(t, err)
	// Every event carries the workload's start time and is recorded minutes later, across a
	// kill: the grace period admits it for the whole run.
	log, err := events.NewLog(s, events.WithKeyspace(keyspace), events.WithGracePeriod(time.Hour))
	require.NoError(t, err)
	ctr, err := counters.New(s, counters.WithKeyspace(keyspace))
	require.NoError(t, err)
	return stores{once: once, log: log, ctr: ctr}
}

// callKey makes key i's three calls and records what they returned; acked is called as soon as
// the executor's result is acknowledged. It reports whether any call failed.
func (w *killWorkload) callKey(i int, st stores, acked func()) (failed bool) {
	k := &w.keys[i]
	k.started = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := st.once.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, keyName(i)), w.fn(i))
	k.onceAt, k.onceErr = time.Now(), err
	if err == nil {
		k.result = res.Value
		acked()
	}
	k.eventErr = st.log.Record(ctx, events.Event{Counter: counterName(i), ID: keyName(i), Delta: 1, Time: w.t0})
	k.eventAt = time.Now()
	k.incr, k.incrErr = st.ctr.Increment(ctx, counters.Op{Counter: counterName(i), ID: keyName(i), Delta: 1})
	k.incrAt = time.Now()
	return k.onceErr != nil || k.eventErr != nil || k.incrErr != nil
}

// runKill starts a node with the commitlog mode, runs the workers until killAfter results were
// acknowledged, kills the node with SIGKILL mid-run and restarts it on its data.
func runKill(t *testing.T, addr, commitlog string) *killWorkload {
	n := startNode(t, addr, commitlog)
	n.applySchema(t)
	w := &killWorkload{node: n, t0: time.Now(), keys: make([]keyCalls, killKeys), runs: make([]atomic.Int32, killKeys)}
	s := n.session(t)
	st := newStores(t, s)

	var (
		next, acked   atomic.Int64
		killing, stop atomic.Bool
		reached       = make(chan struct{})
		reachedOnce   sync.Once
		wg            sync.WaitGroup
	)
	onAck := func() {
		if acked.Add(1) == killAfter {
			reachedOnce.Do(func() { close(reached) })
		}
	}
	worker := func() {
		defer wg.Done()
		for !stop.Load() {
			i := int(next.Add(1) - 1)
			if i >= killKeys {
				return
			}
			// A client that sees the node fail takes no new work: keys after that would fail
			// before reaching it, and say nothing about the crash.
			if w.callKey(i, st, onAck) && killing.Load() {
				stop.Store(true)
			}
		}
	}
	wg.Add(killWorkers)
	for range killWorkers {
		go worker()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	select {
	case <-reached:
	case <-done:
		t.Fatalf("crashtest: the workers ran out of keys before %d results were acknowledged", killAfter)
	case <-time.After(5 * time.Minute):
		stop.Store(true)
		<-done
		t.Fatalf("crashtest: %d results were not acknowledged within 5 minutes (%d were)", killAfter, acked.Load())
	}
	// The workers keep going while the node dies, so the kill lands on calls in flight.
	killing.Store(true)
	w.killing = time.Now()
	n.kill(t)
	w.killed = time.Now()
	stop.Store(true)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("crashtest: workers still running 2 minutes after the kill")
	}
	s.Close()
	n.restart(t)
	return w
}
