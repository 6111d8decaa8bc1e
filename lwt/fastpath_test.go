package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
)

func newNamespacePreCheck(t *testing.T, ns string) *bloom.PreCheck {
	t.Helper()
	p, err := bloom.NewPreCheck(ns, bloom.WithExpectedItems(20000), bloom.WithFalsePositiveRate(0.001),
		bloom.WithRetention(DefaultRetention+time.Hour))
	require.NoError(t, err)
	return p
}

// TestFastPathOwnershipRespectedRunsEachKeyOnce: a sticky router's namespace is served by one
// store at a time. The first process serves it strictly; after a restart the next one owns it,
// warmed from the keys the router logged, and gets new keys, retries of old and new keys,
// concurrent retries within the process and functions that fail once. Every key's function
// takes effect once, and the fast path carries the large majority of the new keys.
func TestFastPathOwnershipRespectedRunsEachKeyOnce(t *testing.T) {
	t.Parallel()
	const ns, old, fresh = "tenant-a", 100, 300
	ctx := ctxT(t)
	first, session, ks := newTestStore(t)
	var mu sync.Mutex
	applied := map[string]int{}
	tries := map[string]int{}
	fn := func(k string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			var i int
			fmt.Sscanf(k, "k-%d", &i)
			if tries[k]++; i%25 == 7 && tries[k] == 1 {
				return nil, errors.New("fails once")
			}
			applied[k]++
			return []byte(k), nil
		}
	}
	var logged []string // the router's own log of the keys it sent
	for i := range old {
		k := fmt.Sprint("k-", i)
		_, _ = first.ExecuteOnce(ctx, IdempotencyKey(ns, k), fn(k))
		logged = append(logged, k)
	}

	s, err := NewStore(session, IdempotencyKeys(ks), WithCache(1000))
	require.NoError(t, err)
	pre := newNamespacePreCheck(t, ns)
	src := bloom.KeySource(func(ctx context.Context, yield func(string, time.Time) error) error {
		for _, k := range logged {
			if err := yield(k, time.Time{}); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, s.Own(ctx, Key{ns}, 2, pre, src))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	call := func(k string) {
		defer wg.Done()
		defer func() { <-sem }()
		for {
			res, err := s.ExecuteOnce(ctx, IdempotencyKey(ns, k), fn(k))
			if err == nil {
				assert.Equal(t, k, string(res.Value))
				return
			}
			if !errors.Is(err, ErrInProgress) {
				if !assert.ErrorContains(t, err, "fails once") {
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	for i := range old + fresh {
		k := fmt.Sprint("k-", i)
		copies := 1
		if i%5 == 0 {
			copies = 2 // retried at once
		}
		for range copies {
			wg.Add(1)
			sem <- struct{}{}
			go call(k)
		}
	}
	wg.Wait()
	for i := range old + fresh {
		k := fmt.Sprint("k-", i)
		wg.Add(1)
		sem <- struct{}{}
		go call(k) // retried later
	}
	wg.Wait()
	for i := range old + fresh {
		require.Equal(t, 1, applied[fmt.Sprint("k-", i)], "k-%d took effect once", i)
	}
	st := s.Stats()
	frac := float64(st.FastPath) / fresh
	t.Logf("%d new keys: fast path %d (%.1f%%), failed on it %d; LWT path %d; false positives %d; in-process in progress %d; warm-up %d keys in %v",
		fresh, st.FastPath, 100*frac, st.FastPathFailed, st.FastPathLWT, st.FalsePositives, st.InFlight,
		pre.Stats().WarmUpKeys, pre.Stats().WarmUpDuration)
	require.GreaterOrEqual(t, frac, 0.9)
	require.LessOrEqual(t, st.FastPath, int64(fresh), "no old key took the fast path")

	s.Disown(Key{ns})
	assert.False(t, pre.Check("never-seen").ClearlyNew())
	before := s.Stats().FastPath
	_, err = s.ExecuteOnce(ctx, IdempotencyKey(ns, "after-disown"), fn("after-disown"))
	require.NoError(t, err)
	assert.Equal(t, before, s.Stats().FastPath, "a disowned namespace takes the LWT path")
	assert.Error(t, s.Own(ctx, Key{ns}, 2, pre, src), "the epoch must grow")
}
