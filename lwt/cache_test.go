package lwt

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cache's own logic: no node is needed, nothing it does talks CQL.

func completed(expires time.Time, result string) *Record {
	return &Record{Status: StatusCompleted, Result: []byte(result), ExpiresAt: expires}
}

func cacheGet(c *completedCache, key Key) *Record {
	return c.get([]byte(cacheKey(key)))
}

// checkCacheInvariants checks that the index and the ring hold the same entries, each at its
// slot, and no more than the capacity.
func checkCacheInvariants(t *testing.T, c *completedCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.LessOrEqual(t, len(c.ring), c.cap)
	require.Len(t, c.items, len(c.ring))
	for i, e := range c.ring {
		require.Equal(t, i, e.slot)
		require.Same(t, e, c.items[e.hash])
	}
	if len(c.ring) > 0 {
		require.Less(t, c.hand, len(c.ring))
	}
}

func TestCacheSecondChanceEviction(t *testing.T) {
	t.Parallel()
	c := newCompletedCache(3, nil)
	later := time.Now().Add(time.Hour)
	for _, k := range []string{"a", "b", "c"} {
		c.put(cacheKey(IdempotencyKey("t", k)), completed(later, k))
	}
	// a and c are hit, so b, the only one not used since it was cached, makes room for d.
	require.NotNil(t, cacheGet(c, IdempotencyKey("t", "a")))
	require.NotNil(t, cacheGet(c, IdempotencyKey("t", "c")))
	c.put(cacheKey(IdempotencyKey("t", "d")), completed(later, "d"))
	checkCacheInvariants(t, c)
	assert.Nil(t, cacheGet(c, IdempotencyKey("t", "b")), "evicted: not used since cached")
	for _, k := range []string{"a", "c", "d"} {
		rec := cacheGet(c, IdempotencyKey("t", k))
		if assert.NotNil(t, rec, k) {
			assert.Equal(t, k, string(rec.Result))
		}
	}
	// Every entry is now marked: the hand unmarks a whole turn and evicts where it began.
	c.put(cacheKey(IdempotencyKey("t", "e")), completed(later, "e"))
	checkCacheInvariants(t, c)
	assert.Equal(t, 3, c.len())
}

func TestCacheUpdateAndDrop(t *testing.T) {
	t.Parallel()
	c := newCompletedCache(2, nil)
	later := time.Now().Add(time.Hour)
	k := cacheKey(IdempotencyKey("t", "k"))
	c.put(k, completed(later, "first"))
	c.put(k, completed(later, "second"))
	assert.Equal(t, 1, c.len(), "the same key takes one slot")
	assert.Equal(t, "second", string(c.get([]byte(k)).Result))
	c.put(k, &Record{Status: StatusStarted, ExpiresAt: later})
	assert.Equal(t, "second", string(c.get([]byte(k)).Result), "only completed records are cached")
	c.drop(cacheKey(IdempotencyKey("t", "other")))
	assert.Equal(t, 1, c.len(), "dropping another key keeps this one")
	c.drop(k)
	assert.Nil(t, c.get([]byte(k)))
	assert.Equal(t, 0, c.len())
	checkCacheInvariants(t, c)
}

// An entry is never served once its record has expired, by the monotonic clock or by the
// store's clock.
func TestCacheExpiry(t *testing.T) {
	t.Parallel()
	t.Run("monotonic", func(t *testing.T) {
		t.Parallel()
		c := newCompletedCache(4, nil)
		k := cacheKey(IdempotencyKey("t", "k"))
		c.put(k, completed(time.Now().Add(50*time.Millisecond), "v"))
		c.put(cacheKey(IdempotencyKey("t", "past")), completed(time.Now().Add(-time.Second), "v"))
		assert.Nil(t, cacheGet(c, IdempotencyKey("t", "past")), "expired before it was cached")
		require.Eventually(t, func() bool { return c.get([]byte(k)) == nil }, 5*time.Second, 10*time.Millisecond)
		assert.Equal(t, 0, c.len(), "an expired entry is removed when it is met")
		checkCacheInvariants(t, c)
	})
	t.Run("store clock", func(t *testing.T) {
		t.Parallel()
		var now atomic.Int64
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return start.Add(time.Duration(now.Load())) }
		c := newCompletedCache(4, clock)
		k := cacheKey(IdempotencyKey("t", "k"))
		c.put(k, completed(start.Add(time.Minute), "v"))
		now.Store(int64(time.Minute - time.Nanosecond))
		assert.NotNil(t, c.get([]byte(k)), "live until its expiry")
		now.Store(int64(time.Minute))
		assert.Nil(t, c.get([]byte(k)), "gone at its expiry")
	})
}

// Many goroutines put, get and drop the same few keys: the race detector watches, and the index
// and the ring stay consistent.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := newCompletedCache(8, nil)
	later := time.Now().Add(time.Hour)
	const workers, rounds, keys = 16, 2000, 12
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				name := fmt.Sprint(i % keys)
				k := cacheKey(IdempotencyKey("t", name))
				switch (w + i) % 5 {
				case 0:
					c.put(k, completed(later, name))
				case 1:
					c.drop(k)
				default:
					if rec := c.get([]byte(k)); rec != nil && string(rec.Result) != name {
						wrong.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, wrong.Load(), "a hit returned another key's record")
	checkCacheInvariants(t, c)
}
