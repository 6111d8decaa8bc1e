package bench

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestCheckFastPath(t *testing.T) {
	assert.NoError(t, checkFastPath(guard.Processed, true, false))
	assert.ErrorIs(t, checkFastPath(guard.Processed, true, true), errUnexpectedOutcome,
		"a message that took the LWT path must not be timed as the fast path")
	assert.ErrorIs(t, checkFastPath(guard.Duplicate, false, false), errUnexpectedOutcome)
	assert.ErrorIs(t, checkFastPath(guard.Processed, false, false), errUnexpectedOutcome)
	assert.Equal(t, outcomeError, classify(checkFastPath(guard.Processed, true, true)))
}

func TestWorkerSpansCountThePhasesEachWorkerRuns(t *testing.T) {
	spans := workerSpans([]phasePlan{
		{mode: ModeWarmup, workers: 4, duration: 5 * time.Second},
		{mode: ModeClosed, workers: 1, duration: 10 * time.Second},
		{mode: ModeClosed, workers: 16, duration: 10 * time.Second},
		{mode: ModeOpen, workers: 8, rate: 100, duration: 10 * time.Second},
	})
	assert.Len(t, spans, 16, "one per worker index of the widest phase")
	assert.Equal(t, 35*time.Second, spans[0])
	assert.Equal(t, 25*time.Second, spans[3])
	assert.Equal(t, 20*time.Second, spans[4])
	assert.Equal(t, 10*time.Second, spans[15])
}

func TestBloomSizesFollowTheSpansWithinBounds(t *testing.T) {
	sizes := bloomSizes([]time.Duration{10 * time.Second, time.Millisecond})
	assert.Equal(t, []uint64{10 * bloomWorkerRate, bloomMinItems}, sizes)

	// A long sweep to high concurrency: the total is bounded, the ratios kept.
	spans := make([]time.Duration, 1024)
	for w := range spans {
		spans[w] = 10 * time.Minute
	}
	spans[0] = 20 * time.Minute
	sizes = bloomSizes(spans)
	var total uint64
	for _, n := range sizes {
		total += n
	}
	assert.LessOrEqual(t, total, uint64(bloomMaxItems))
	assert.InDelta(t, 2*sizes[1], sizes[0], 2)
	assert.GreaterOrEqual(t, sizes[1], uint64(bloomMinItems))
}

// TestBloomFailsWhenTheLWTPathAnswers checks the operation against a node: requests on owned
// scopes take the fast path, and once a scope is disowned its requests, now answered by the LWT
// path, are errors rather than fast answers.
func TestBloomFailsWhenTheLWTPathAnswers(t *testing.T) {
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	env := Env{Session: session, Keyspace: ks, RunID: newRunID(time.Now()), Consistency: gocql.Quorum,
		Serial: gocql.Serial, MaxWorkers: 2, WorkerSpans: []time.Duration{time.Second, time.Second}}
	op, err := newBloomFastPath(env)
	require.NoError(t, err)
	b := op.(*bloomFastPath)
	require.NoError(t, b.Setup(ctx))
	for seq := range 3 {
		for w := range 2 {
			require.NoError(t, b.Do(ctx, Request{Phase: 0, Worker: w, Seq: seq}))
		}
	}
	s := b.guard.Stats()
	assert.Equal(t, int64(6), s.FastPath)
	assert.Zero(t, s.FastPathLWT)

	b.guard.Disown(b.scope(1))
	require.NoError(t, b.Do(ctx, Request{Phase: 1, Worker: 0, Seq: 0}), "worker 0's scope is still owned")
	err = b.Do(ctx, Request{Phase: 1, Worker: 1, Seq: 0})
	assert.ErrorIs(t, err, errNotFastPath)
	assert.Equal(t, outcomeError, classify(err))
	assert.Equal(t, int64(7), b.guard.Stats().FastPath)
	assert.NoError(t, b.Close(), "the guard counted exactly the handlers that ran without a claim")
}

// TestGuardBatchBloomTakesTheFastPath: guard-batch-bloom's polls of new messages run every
// handler without a claim, and its Close checks that none took the LWT path.
func TestGuardBatchBloomTakesTheFastPath(t *testing.T) {
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	env := Env{Session: session, Keyspace: ks, RunID: newRunID(time.Now()), Consistency: gocql.Quorum,
		Serial: gocql.Serial, MaxWorkers: 2, WorkerSpans: []time.Duration{time.Second, time.Second}, BatchSize: 50}
	op, err := newGuardBatchBloom(env)
	require.NoError(t, err)
	require.Equal(t, "guard-batch-bloom", op.Name())
	require.NoError(t, op.Setup(ctx))
	for seq := range 3 {
		for w := range 2 {
			require.NoError(t, op.Do(ctx, Request{Phase: 0, Worker: w, Seq: seq}))
		}
	}
	g := op.(*guardBatch)
	assert.Equal(t, int64(300), g.guard.Stats().FastPath)
	assert.Zero(t, g.guard.BatchStats().Claims, "no Paxos round")
	assert.NoError(t, g.Close())
}
