package lwt

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCacheAndObserver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	kinds := map[ObservationKind]int{}
	obs := ObserverFunc(func(e Observation) { mu.Lock(); kinds[e.Kind]++; mu.Unlock() })
	s, _, _ := newTestStore(t, WithCache(2), WithObserver(obs), WithRetention(3*time.Second), WithLease(time.Second))
	ctx := ctxT(t)
	fn := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	for _, k := range []string{"a", "b", "c"} {
		_, err := s.ExecuteOnce(ctx, IdempotencyKey("t", k), fn, WithRequest([]byte("r")))
		require.NoError(t, err)
	}
	assert.Equal(t, 2, s.cache.len(), "bounded")
	res, err := s.ExecuteOnce(ctx, IdempotencyKey("t", "c"), fn, WithRequest([]byte("r")))
	require.NoError(t, err)
	assert.True(t, res.FromCache)
	res, err = s.ExecuteOnce(ctx, IdempotencyKey("t", "a"), fn, WithRequest([]byte("r")))
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.False(t, res.FromCache, "evicted: not hit since it was cached")

	// A cached record expires with its record: the key then runs again.
	time.Sleep(4 * time.Second)
	res, err = s.ExecuteOnce(ctx, IdempotencyKey("t", "c"), fn, WithRequest([]byte("r")))
	require.NoError(t, err)
	assert.False(t, res.Replay)

	st := s.Stats()
	assert.EqualValues(t, 4, st.Claims)
	assert.EqualValues(t, 1, st.CacheHits)
	assert.EqualValues(t, 1, st.Replays)
	assert.EqualValues(t, 4, st.Completions)
	assert.Positive(t, st.LWTLatencyMean())
	assert.GreaterOrEqual(t, st.LWTLatencyMax, st.LWTLatencyMean())
	mu.Lock()
	assert.EqualValues(t, st.Claims, kinds[ObservedClaim])
	assert.EqualValues(t, st.LWTs, kinds[ObservedLWT])
	mu.Unlock()
}

func TestExecuteTyped(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	type receipt struct {
		ID    string
		Total int
	}
	key := IdempotencyKey("t", "typed")
	runs := 0
	fn := func(context.Context) (receipt, error) { runs++; return receipt{ID: "r1", Total: 42}, nil }
	r, replay, err := Execute(ctx, s, key, JSON[receipt]{}, fn)
	require.NoError(t, err)
	assert.False(t, replay)
	r2, replay, err := Execute(ctx, s, key, JSON[receipt]{}, fn)
	require.NoError(t, err)
	assert.True(t, replay)
	assert.Equal(t, r, r2)
	assert.Equal(t, 1, runs)
	_, _, err = Execute(ctx, s, IdempotencyKey("t", "unencodable"), JSON[func()]{}, func(context.Context) (func(), error) { return func() {}, nil })
	assert.ErrorIs(t, err, ErrStoredFailure, "an unencodable result is a permanent failure")
}

// TestCacheHitAllocatesNothing: a duplicate answered by the cache allocates nothing (the cache
// is consulted before any call state exists), and an invalid key is still refused on the miss.
// (Not parallel: AllocsPerRun counts the whole process's allocations.)
func TestCacheHitAllocatesNothing(t *testing.T) {
	s, _, _ := newTestStore(t, WithCache(8))
	ctx := ctxT(t)
	key := IdempotencyKey("ns", "alloc")
	fn := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	_, err := s.ExecuteOnce(ctx, key, fn)
	require.NoError(t, err)
	misses := 0
	allocs := testing.AllocsPerRun(100, func() {
		if res, err := s.ExecuteOnce(ctx, key, fn); err != nil || !res.FromCache {
			misses++
		}
	})
	assert.Zero(t, misses, "every call a cache hit")
	assert.Zero(t, allocs)

	_, err = s.ExecuteOnce(ctx, Key{"ns", 1.5}, fn)
	assert.ErrorIs(t, err, ErrInvalidKey, "an unsupported value is validated on the miss")
	_, err = s.ExecuteOnce(ctx, Key{"ns", "alloc", "extra"}, fn)
	assert.ErrorIs(t, err, ErrInvalidKey)
}
