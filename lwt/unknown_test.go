package lwt

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/faultproxy"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/testnode"
)

// faultyStores returns a store that reaches the node through a fault proxy (client timeout
// 2s) and one that reaches it directly, on the same fresh keyspace.
func faultyStores(t *testing.T, opts ...StoreOption) (proxied, direct *Store, p *faultproxy.Proxy) {
	t.Helper()
	n := testnode.NewProxied(t)
	proxied, err := NewStore(n.Proxied, IdempotencyKeys(n.Keyspace), opts...)
	require.NoError(t, err)
	direct, err = NewStore(n.Direct, IdempotencyKeys(n.Keyspace), opts...)
	require.NoError(t, err)
	return proxied, direct, n.Proxy
}

// TestUnknownOutcomeClaimApplied: the claim reaches the node and applies, its response is lost;
// the serial read finds our owner token, so this call continues as the owner: one run, result
// stored.
func TestUnknownOutcomeClaimApplied(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "lost-response-claim")
	p.Arm("lost-response-claim", faultproxy.DropResponse, 1, nil)
	var runs atomic.Int32
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("paid"), nil })
	require.NoError(t, err)
	assert.Equal(t, 1, p.Lost(), "the claim's response was lost")
	assert.False(t, res.Replay)
	assert.EqualValues(t, 1, runs.Load())
	st := s.Stats()
	assert.EqualValues(t, 1, st.UnknownOutcomes)
	assert.EqualValues(t, 1, st.ResolvedOutcomes)

	again, err := direct.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return nil, nil })
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.Equal(t, "paid", string(again.Value))
	assert.EqualValues(t, 1, runs.Load())
}

// TestUnknownOutcomeClaimNotApplied: the claim never reaches the node; the serial read finds no
// record, so the claim is sent again (same owner token) and the function runs once.
func TestUnknownOutcomeClaimNotApplied(t *testing.T) {
	t.Parallel()
	s, _, p := faultyStores(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "lost-request-claim")
	p.Arm("lost-request-claim", faultproxy.DropRequest, 1, nil)
	var runs atomic.Int32
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("once"), nil })
	require.NoError(t, err)
	assert.Equal(t, 1, p.Lost())
	assert.False(t, res.Replay)
	assert.Equal(t, 1, res.Attempts)
	assert.EqualValues(t, 1, runs.Load())
	assert.EqualValues(t, 1, s.Stats().UnknownOutcomes)
	assert.Equal(t, "once", string(readRecord(t, s, key).Result))
}

// TestUnknownOutcomeOtherWorkerWon: our claim is lost and meanwhile another worker claims and
// completes the key; the serial read shows their record, so this call replays their result.
func TestUnknownOutcomeOtherWorkerWon(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "lost-request-race")
	var runs atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	p.Arm("lost-request-race", faultproxy.DropRequest, 1, func() {
		go func() {
			defer wg.Done()
			_, err := direct.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("theirs"), nil })
			assert.NoError(t, err)
		}()
		wg.Wait() // the other worker finishes before our timeout fires
	})
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("ours"), nil })
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.Equal(t, "theirs", string(res.Value))
	assert.EqualValues(t, 1, runs.Load())
}

// TestUnknownOutcomeCompleteApplied: the completion applies but its response is lost; the
// serial read shows our record COMPLETED, so the call succeeds and the result is not lost.
func TestUnknownOutcomeCompleteApplied(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "lost-response-complete")
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		p.Arm("lost-response-complete", faultproxy.DropResponse, 1, nil) // the next request with the key is the completion
		return []byte("done"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, p.Lost())
	assert.Equal(t, "done", string(res.Value))
	again, err := direct.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { t.Error("ran twice"); return nil, nil })
	require.NoError(t, err)
	assert.Equal(t, "done", string(again.Value))
	assert.EqualValues(t, 1, s.Stats().UnknownOutcomes)
}

// TestUnknownOutcomeUnresolved: the claim applies, its response and the resolving read are both
// lost: the call returns ErrOutcomeUnknown wrapping the driver's timeout and never guesses. The
// claim it may hold blocks the key until its lease passes; then a retry runs the function once.
func TestUnknownOutcomeUnresolved(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, _, p := faultyStores(t, WithLease(time.Second), WithClock(clock.Now))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "lost-everything")
	p.Arm("lost-everything", faultproxy.DropResponse, 2, nil)
	var runs atomic.Int32
	fn := func(context.Context) ([]byte, error) { runs.Add(1); return []byte("v"), nil }
	_, err := s.ExecuteOnce(ctx, key, fn)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.ErrorIs(t, err, gocql.ErrTimeoutNoResponse, "the driver's error is wrapped")
	var ou *cas.OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, "claim", ou.Op)
	assert.Zero(t, runs.Load())

	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.ExecuteOnce(ctx, key, fn)
		if err == nil {
			assert.False(t, res.Replay)
			assert.Equal(t, 2, res.Attempts, "the lost claim counted as an attempt and was taken over")
			break
		}
		require.ErrorIs(t, err, ErrInProgress)
		require.True(t, time.Now().Before(deadline))
		clock.Advance(200 * time.Millisecond) // no effect on the lease: only the server's clock ends it
		time.Sleep(200 * time.Millisecond)
	}
	assert.EqualValues(t, 1, runs.Load())
}

// TestUnknownOutcomeCompletePersists: the function has run; the completion applies but its
// response and the next two confirming reads are lost (each a client timeout). The resolver
// keeps reading within the commit budget, with the lease still renewed, and finds the
// completion: the call succeeds, the function ran once, and a retry replays.
func TestUnknownOutcomeCompletePersists(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t, WithLease(2*time.Second), WithCommitTimeout(30*time.Second))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "persist-applied")
	var runs atomic.Int32
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		runs.Add(1)
		p.Arm("persist-applied", faultproxy.DropResponse, 3, nil) // the completion, then two serial reads
		return []byte("done"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, p.Lost())
	assert.Equal(t, "done", string(res.Value))
	again, err := direct.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return nil, nil })
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.Equal(t, "done", string(again.Value))
	assert.EqualValues(t, 1, runs.Load())
	assert.Zero(t, s.Stats().Takeovers+direct.Stats().Takeovers)
}

// TestUnknownOutcomeCompleteResent: the completion never reaches the node (its request is
// lost, so the driver times out); the serial read shows the record still ours and STARTED, so
// the completion is sent again and applies. One run, result stored.
func TestUnknownOutcomeCompleteResent(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t, WithLease(2*time.Second), WithCommitTimeout(30*time.Second))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "persist-resent")
	var runs atomic.Int32
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		runs.Add(1)
		p.Arm("persist-resent", faultproxy.DropRequest, 1, nil)
		return []byte("done"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, p.Lost())
	assert.Equal(t, "done", string(res.Value))
	rec := readRecord(t, direct, key)
	assert.Equal(t, StatusCompleted, rec.Status)
	assert.Equal(t, "done", string(rec.Result))
	assert.EqualValues(t, 1, runs.Load())
}

// TestUnknownOutcomeCompleteGivesUp: every send and read of the completion is lost for longer
// than the commit budget: the call reports ErrOutcomeUnknown (the function HAS run) with the
// driver's error reachable, never success and never ErrLeaseLost.
func TestUnknownOutcomeCompleteGivesUp(t *testing.T) {
	t.Parallel()
	s, _, p := faultyStores(t, WithLease(2*time.Second), WithCommitTimeout(3*time.Second))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "persist-gives-up")
	_, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		p.Arm("persist-gives-up", faultproxy.DropRequest, 1000, nil)
		return []byte("done"), nil
	})
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	var ou *cas.OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, "complete", ou.Op)
	assert.ErrorIs(t, err, gocql.ErrTimeoutNoResponse)
	p.Arm("persist-gives-up", faultproxy.DropRequest, 0, nil)
}

// TestPutNotFoundAfterUnknownIsNotApplied: a conditional put whose request was lost is read
// back; no row means it did not apply (never "unknown"), and the fast path sends it again.
func TestPutNotFoundAfterUnknownIsNotApplied(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "put-lost")
	p.Arm("put-lost", faultproxy.DropRequest, 1, nil)
	applied, existing, err := s.PutCompletedIfNotExists(ctx, key, nil, []byte("v"), 1)
	require.NoError(t, err)
	assert.False(t, applied)
	assert.Nil(t, existing)
	_, err = direct.Get(ctx, key)
	assert.ErrorIs(t, err, ErrNotFound)
}
