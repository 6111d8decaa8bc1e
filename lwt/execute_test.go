package lwt

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// TestExecuteOnceConcurrent: 64 goroutines attempt each of 200 keys; every fn runs exactly once
// per key and every caller gets the same result, flagged as a replay except for the one run.
func TestExecuteOnceConcurrent(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	const workers, keys = 64, 200
	var runs [keys]atomic.Int32
	var results [keys]sync.Map // worker → value seen
	var fresh [keys]atomic.Int32
	var retries atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int(randInt(keys)) // each worker walks the keys from its own offset
			for i := range keys {
				k := (off + i) % keys
				key := IdempotencyKey("conc", fmt.Sprintf("key-%d", k))
				for {
					res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
						runs[k].Add(1)
						return []byte(fmt.Sprintf("%d-%d", k, randInt(1<<62))), nil
					}, WithRequest([]byte("same")), WithWait())
					if errors.Is(err, ErrOutcomeUnknown) {
						retries.Add(1) // the documented answer: try the same call again
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					if !res.Replay {
						fresh[k].Add(1)
					}
					results[k].Store(w, string(res.Value))
					break
				}
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		assert.EqualValues(t, 1, runs[k].Load(), "key %d ran %d times", k, runs[k].Load())
		assert.EqualValues(t, 1, fresh[k].Load(), "key %d: non-replay answers", k)
		seen := map[string]bool{}
		n := 0
		results[k].Range(func(_, v any) bool { seen[v.(string)] = true; n++; return true })
		assert.Equal(t, workers, n)
		assert.Len(t, seen, 1, "key %d: callers saw different results", k)
	}
	st := s.Stats()
	t.Logf("stats: %+v, unknown-outcome retries: %d, mean LWT %v", st, retries.Load(), st.LWTLatencyMean())
	assert.EqualValues(t, keys, st.Claims)
}

func randInt(n int64) int64 {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		panic(err)
	}
	return v.Int64()
}

func TestKeyReuseRejected(t *testing.T) {
	t.Parallel()
	s, session, ks := newTestStore(t, WithCache(10))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "charge-1")
	var runs atomic.Int32
	fn := func(context.Context) ([]byte, error) { runs.Add(1); return []byte("ok"), nil }
	_, err := s.ExecuteOnce(ctx, key, fn, WithRequest([]byte(`{"amount":10}`)))
	require.NoError(t, err)
	_, err = s.ExecuteOnce(ctx, key, fn, WithRequest([]byte(`{"amount":99}`)))
	assert.ErrorIs(t, err, ErrKeyReuse, "through the cache")
	s2, err := NewStore(session, IdempotencyKeys(ks))
	require.NoError(t, err)
	_, err = s2.ExecuteOnce(ctx, key, fn, WithRequest([]byte(`{"amount":99}`)))
	assert.ErrorIs(t, err, ErrKeyReuse, "through the node")
	_, err = s2.ExecuteOnce(ctx, key, fn)
	assert.ErrorIs(t, err, ErrKeyReuse, "no fingerprint differs from one")
	assert.EqualValues(t, 1, runs.Load())
	assert.Equal(t, []byte("ok"), readRecord(t, s, key).Result, "the stored result is untouched")
}

func TestInProgressAndWait(t *testing.T) {
	t.Parallel()
	// A lease of a few seconds: a loaded machine can delay one renewal by a second, and a
	// renewal late by a whole lease would let the waiter take over.
	const lease = 3 * time.Second
	s, _, _ := newTestStore(t, WithLease(lease))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "slow")
	started, release := make(chan struct{}), make(chan struct{})
	var first Result
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, firstErr = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
			close(started)
			<-release
			return []byte("slow result"), nil
		})
	}()
	<-started
	_, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { t.Error("duplicate ran"); return nil, nil })
	var ip *InProgressError
	require.ErrorAs(t, err, &ip)
	assert.ErrorIs(t, err, ErrInProgress)
	assert.True(t, ip.LeaseUntil.After(time.Now()))

	waited := make(chan Result)
	go func() {
		res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { t.Error("waiter ran"); return nil, nil }, WithWait())
		assert.NoError(t, err)
		waited <- res
	}()
	time.Sleep(lease + lease/2) // longer than the lease: renewal must keep the claim
	close(release)
	res := <-waited
	<-done
	require.NoError(t, firstErr)
	assert.False(t, first.Replay)
	assert.True(t, res.Replay)
	assert.Equal(t, "slow result", string(res.Value))
	assert.Zero(t, s.Stats().Takeovers, "a renewed lease is not taken over")

	// A waiter whose ctx ends gets ctx.Err() unchanged.
	key2 := IdempotencyKey("tenant", "slow2")
	c, _, err := s.Begin(ctx, key2, nil)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = s.ExecuteOnce(wctx, key2, func(context.Context) ([]byte, error) { return nil, nil }, WithWait())
	assert.True(t, err == context.DeadlineExceeded, "ctx.Err() unchanged, got %v", err)
	require.NoError(t, s.Complete(ctx, c, []byte("x")))
}

// TestCrashedWorkerTakenOver: a claim that is never finished is taken over after its lease,
// and the crashed owner's late completion is fenced off.
func TestCrashedWorkerTakenOver(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, _, _ := newTestStore(t, WithLease(time.Second), WithClock(clock.Now))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "crash")
	crashed, rec, err := s.Begin(ctx, key, nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	assert.EqualValues(t, 1, crashed.Fence)

	_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return nil, nil })
	require.ErrorIs(t, err, ErrInProgress, "the lease is still live")

	// The caller's clock cannot end a lease: even two leases ahead, the claim is still live.
	clock.Advance(2 * time.Second)
	_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return nil, nil })
	require.ErrorIs(t, err, ErrInProgress, "the server still holds the lease")
	waitLeaseExpired(t, s, key)
	var fence int64
	res, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		c, ok := ClaimFromContext(ctx)
		require.True(t, ok)
		fence = c.Fence
		assert.True(t, c.TakenOver)
		return []byte("second worker"), nil
	})
	require.NoError(t, err)
	assert.False(t, res.Replay)
	assert.EqualValues(t, 2, fence)
	assert.EqualValues(t, 2, res.Attempts)

	assert.ErrorIs(t, s.Complete(ctx, crashed, []byte("late")), ErrLeaseLost)
	assert.ErrorIs(t, s.Renew(ctx, crashed), ErrLeaseLost)
	assert.ErrorIs(t, s.Release(ctx, crashed, nil), ErrLeaseLost)
	got := readRecord(t, s, key)
	assert.Equal(t, "second worker", string(got.Result))
	assert.Equal(t, StatusCompleted, got.Status)
	assert.EqualValues(t, 1, s.Stats().Takeovers)
	assert.EqualValues(t, 3, s.Stats().LeaseLost)
}

// TestLeaseLostCancelsFunction: when another worker takes the claim over while fn runs (its
// renewals stopped reaching the node), fn's ctx is canceled with ErrLeaseLost and nothing of
// the old run is stored.
func TestLeaseLostCancelsFunction(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, _, _ := newTestStore(t, WithLease(time.Second), WithClock(clock.Now))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "stolen")
	c, _, err := s.Begin(ctx, key, nil)
	require.NoError(t, err)
	// Take it over as a second worker would, by force: fence 1 → 2 with the takeover statement.
	waitLeaseExpired(t, s, key)
	thief, _, err := s.Begin(ctx, key, nil)
	require.NoError(t, err)
	require.EqualValues(t, 2, thief.Fence)
	// The first worker's renewal now fails its IF; fn sees the cancellation.
	err = s.Renew(ctx, c)
	assert.ErrorIs(t, err, ErrLeaseLost)

	// Through the executor: fn runs past a lease while another store steals the claim.
	key2 := IdempotencyKey("tenant", "stolen2")
	cause := make(chan error, 1)
	res, err := s.ExecuteOnce(ctx, key2, func(fctx context.Context) ([]byte, error) {
		cl, _ := ClaimFromContext(fctx)
		// Simulate the node losing this claim: a conditional write with our owner's token.
		now := clock.Now()
		applied, _, err := cas.UpdateIf(ctx, s.session.Query(`UPDATE idempotency_keys USING TTL ? SET owner = ?, fence = ? WHERE namespace = 'tenant' AND key = 'stolen2' IF owner = ? AND fence = ?`,
			ttlSeconds(cl.ExpiresAt, now), mustUUID(t), cl.Fence+1, cl.Owner, cl.Fence), s.cfg.serial)
		require.NoError(t, err)
		require.True(t, applied)
		<-fctx.Done()
		cause <- context.Cause(fctx)
		return []byte("too late"), nil
	})
	assert.ErrorIs(t, err, ErrLeaseLost)
	assert.Nil(t, res.Value)
	assert.ErrorIs(t, <-cause, ErrLeaseLost)
	assert.Equal(t, StatusStarted, readRecord(t, s, key2).Status, "the old run stored nothing")
}

func TestRetryableFailureReleasesAndCountsAttempts(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "flaky")
	errFlaky := errors.New("upstream 503")
	var runs atomic.Int32
	fn := func(ctx context.Context) ([]byte, error) {
		c, _ := ClaimFromContext(ctx)
		if runs.Add(1) < 3 {
			return nil, fmt.Errorf("attempt %d: %w", c.Attempts, errFlaky)
		}
		return []byte("finally"), nil
	}
	for i := 1; i <= 2; i++ {
		_, err := s.ExecuteOnce(ctx, key, fn)
		assert.ErrorIs(t, err, errFlaky, "the function's error is returned unchanged")
		rec := readRecord(t, s, key)
		assert.Equal(t, StatusReleased, rec.Status)
		assert.Equal(t, i, rec.Attempts)
		assert.Contains(t, string(rec.Result), "upstream 503", "the last error is kept")
	}
	res, err := s.ExecuteOnce(ctx, key, fn)
	require.NoError(t, err)
	assert.False(t, res.Replay)
	assert.Equal(t, 3, res.Attempts)
	assert.EqualValues(t, 3, res.Fence)
	res, err = s.ExecuteOnce(ctx, key, fn)
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.Equal(t, "finally", string(res.Value))
	assert.EqualValues(t, 3, runs.Load())
	assert.EqualValues(t, 2, s.Stats().Releases)
}

func TestPermanentFailureReplayed(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "declined")
	errDeclined := errors.New("card declined")
	var runs atomic.Int32
	fn := func(context.Context) ([]byte, error) { runs.Add(1); return nil, Permanent(errDeclined) }
	_, err := s.ExecuteOnce(ctx, key, fn)
	var fe *FailureError
	require.ErrorAs(t, err, &fe)
	assert.False(t, fe.Replay)
	assert.ErrorIs(t, err, errDeclined)
	assert.ErrorIs(t, err, ErrStoredFailure)
	_, err = s.ExecuteOnce(ctx, key, fn)
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.Replay)
	assert.Equal(t, "card declined", fe.Message)
	assert.EqualValues(t, 1, runs.Load())
}

func TestPanicReleasesClaim(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "panics")
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { panic("boom") })
	})
	assert.Equal(t, StatusReleased, readRecord(t, s, key).Status)
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	require.NoError(t, err)
	assert.Equal(t, 2, res.Attempts)
}

// TestCommitBudgetStartsWhenFunctionReturns: a function that runs longer than the commit
// timeout still has the whole budget to store its result.
func TestCommitBudgetStartsWhenFunctionReturns(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t, WithLease(time.Second), WithCommitTimeout(500*time.Millisecond))
	ctx := ctxT(t)
	key := IdempotencyKey("tenant", "slow-fn")
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		time.Sleep(time.Second) // twice the commit timeout
		return []byte("stored"), nil
	})
	require.NoError(t, err)
	assert.Equal(t, "stored", string(res.Value))
	assert.Equal(t, StatusCompleted, readRecord(t, s, key).Status)
}
