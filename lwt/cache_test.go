package lwt

import (
	"fmt"
	"hash/maphash"
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
		c.put(IdempotencyKey("t", k), completed(later, k))
	}
	// a and c are hit, so b, the only one not used since it was cached, makes room for d.
	require.NotNil(t, c.get(IdempotencyKey("t", "a")))
	require.NotNil(t, c.get(IdempotencyKey("t", "c")))
	c.put(IdempotencyKey("t", "d"), completed(later, "d"))
	checkCacheInvariants(t, c)
	assert.Nil(t, c.get(IdempotencyKey("t", "b")), "evicted: not used since cached")
	for _, k := range []string{"a", "c", "d"} {
		rec := c.get(IdempotencyKey("t", k))
		if assert.NotNil(t, rec, k) {
			assert.Equal(t, k, string(rec.Result))
		}
	}
	// Every entry is now marked: the hand unmarks a whole turn and evicts where it began.
	c.put(IdempotencyKey("t", "e"), completed(later, "e"))
	checkCacheInvariants(t, c)
	assert.Equal(t, 3, c.len())
}

func TestCacheUpdateAndDrop(t *testing.T) {
	t.Parallel()
	c := newCompletedCache(2, nil)
	later := time.Now().Add(time.Hour)
	k := IdempotencyKey("t", "k")
	c.put(k, completed(later, "first"))
	c.put(k, completed(later, "second"))
	assert.Equal(t, 1, c.len(), "the same key takes one slot")
	assert.Equal(t, "second", string(c.get(k).Result))
	c.put(k, &Record{Status: StatusStarted, ExpiresAt: later})
	assert.Equal(t, "second", string(c.get(k).Result), "only completed records are cached")
	c.drop(IdempotencyKey("t", "other"))
	assert.Equal(t, 1, c.len(), "dropping another key keeps this one")
	c.drop(k)
	assert.Nil(t, c.get(k))
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
		k := IdempotencyKey("t", "k")
		c.put(k, completed(time.Now().Add(50*time.Millisecond), "v"))
		c.put(IdempotencyKey("t", "past"), completed(time.Now().Add(-time.Second), "v"))
		assert.Nil(t, c.get(IdempotencyKey("t", "past")), "expired before it was cached")
		require.Eventually(t, func() bool { return c.get(k) == nil }, 5*time.Second, 10*time.Millisecond)
		assert.Equal(t, 0, c.len(), "an expired entry is removed when it is met")
		checkCacheInvariants(t, c)
	})
	t.Run("store clock", func(t *testing.T) {
		t.Parallel()
		var now atomic.Int64
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { return start.Add(time.Duration(now.Load())) }
		c := newCompletedCache(4, clock)
		k := IdempotencyKey("t", "k")
		c.put(k, completed(start.Add(time.Minute), "v"))
		now.Store(int64(time.Minute - time.Nanosecond))
		assert.NotNil(t, c.get(k), "live until its expiry")
		now.Store(int64(time.Minute))
		assert.Nil(t, c.get(k), "gone at its expiry")
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
				k := IdempotencyKey("t", name)
				switch (w + i) % 5 {
				case 0:
					c.put(k, completed(later, name))
				case 1:
					c.drop(k)
				default:
					if rec := c.get(k); rec != nil && string(rec.Result) != name {
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

// The cache's key identity (hashKey, sameKey) agrees with the encoding the rest of the
// package keys by (appendCacheKey).
func TestCacheKeyIdentity(t *testing.T) {
	t.Parallel()
	seed := maphash.MakeSeed()
	for _, tc := range []struct {
		a, b Key
		same bool
	}{
		{Key{"a", 5}, Key{"a", int64(5)}, true},
		{Key{int32(-7)}, Key{-7}, true},
		{Key{"5"}, Key{5}, false},
		{Key{"ab", "c"}, Key{"a", "bc"}, false},
		{Key{"a"}, Key{"a", "b"}, false},
		{Key{"a", "b"}, Key{"b", "a"}, false},
	} {
		assert.Equal(t, tc.same, sameKey(tc.a, tc.b), "%v %v", tc.a, tc.b)
		assert.Equal(t, tc.same, cacheKey(tc.a) == cacheKey(tc.b), "%v %v", tc.a, tc.b)
		ha, _ := hashKey(seed, tc.a)
		hb, _ := hashKey(seed, tc.b)
		assert.Equal(t, tc.same, ha == hb, "%v %v", tc.a, tc.b)
	}
	_, ok := hashKey(seed, Key{"a", 1.5})
	assert.False(t, ok)
	assert.False(t, sameKey(Key{1.5}, Key{1.5}), "no unsupported value is a key")
	c := newCompletedCache(2, nil)
	c.put(Key{"a", 1.5}, completed(time.Now().Add(time.Hour), "v"))
	assert.Zero(t, c.len(), "an invalid key is never cached")
}

// FuzzCacheKeyIdentity checks sameKey and hashKey against appendCacheKey on arbitrary keys.
func FuzzCacheKeyIdentity(f *testing.F) {
	f.Add("ns", "k", int64(1), "ns", "k", int64(1))
	f.Add("ab", "c", int64(0), "a", "bc", int64(0))
	f.Add("", "\xff", int64(-1), "", "\xff", int64(1))
	seed := maphash.MakeSeed()
	f.Fuzz(func(t *testing.T, a1, a2 string, a3 int64, b1, b2 string, b3 int64) {
		a, b := Key{a1, a2, a3}, Key{b1, b2, int(b3)}
		same := cacheKey(a) == cacheKey(b)
		if sameKey(a, b) != same {
			t.Fatalf("sameKey(%q, %q) = %v, encodings equal: %v", a, b, !same, same)
		}
		ha, _ := hashKey(seed, a)
		hb, _ := hashKey(seed, b)
		if same && ha != hb {
			t.Fatalf("equal keys %q and %q hash apart", a, b)
		}
	})
}
