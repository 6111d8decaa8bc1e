package lwt

import (
	"hash/maphash"
	"sync"
	"time"
)

// completedCache is a bounded cache of COMPLETED records, each dropped at its record's expiry.
// Only completed records are cached: their result never changes, so a hit is never stale.
//
// Eviction is CLOCK (second chance), an approximation of least recently used: a hit marks its
// entry, and an insertion into a full cache evicts the first unmarked entry the hand meets,
// unmarking the ones it passes. A hit then writes one flag instead of reordering a list. Entries
// are indexed by a seeded hash of the key's values (hashKey) and hold a copy of the key, so a
// lookup neither encodes the key nor allocates; two keys of equal hash share a slot, the newer
// one replacing the older, which only costs a miss.
//
// Every hit reads the clock. A coarse clock refreshed by a timer would save that read, but a
// timer can fire late (a stopped or starved process), and a hit meanwhile would serve a record
// that has expired, which a reader of the clock never does.
type completedCache struct {
	seed maphash.Seed
	// now is the store's clock when WithClock replaced time.Now. When it is nil, entries expire
	// by the monotonic clock, which costs one clock read per hit where time.Now costs two: on
	// some virtual machines that read is a large part of a hit's cost.
	now  func() time.Time
	base time.Time // the origin of the entries' monotonic deadlines

	mu    sync.Mutex
	cap   int
	items map[uint64]*cacheEntry
	ring  []*cacheEntry // the entries in CLOCK order; entry.slot is the index
	hand  int           // the next slot the eviction looks at
}

type cacheEntry struct {
	hash     uint64
	key      Key // a copy: the caller's slice may change after the call
	rec      *Record
	deadline time.Duration // rec.ExpiresAt as time since base, when now is nil
	slot     int
	used     bool // hit since the hand last passed
}

func newCompletedCache(capacity int, now func() time.Time) *completedCache {
	return &completedCache{seed: maphash.MakeSeed(), now: now, base: time.Now(), cap: capacity,
		items: make(map[uint64]*cacheEntry, capacity), ring: make([]*cacheEntry, 0, capacity)}
}

// get returns the live record cached under key, or nil. It allocates nothing. The key need not
// be valid: only valid keys are cached, so an invalid one misses.
func (c *completedCache) get(key Key) *Record {
	h, ok := hashKey(c.seed, key)
	if !ok {
		return nil
	}
	// The clock is read before the lock is taken, so that concurrent hits do not hold the lock
	// through each other's clock reads.
	now := c.monotonic()
	c.mu.Lock()
	e := c.items[h]
	if e == nil || !sameKey(e.key, key) {
		c.mu.Unlock()
		return nil
	}
	if !c.live(e, now) {
		c.remove(e)
		c.mu.Unlock()
		return nil
	}
	if !e.used {
		e.used = true
	}
	rec := e.rec
	c.mu.Unlock()
	return rec
}

// monotonic is the time since base, or 0 when the store's own clock judges expiry.
func (c *completedCache) monotonic() time.Duration {
	if c.now != nil {
		return 0
	}
	return time.Since(c.base)
}

func (c *completedCache) live(e *cacheEntry, now time.Duration) bool {
	if c.now != nil {
		return c.now().Before(e.rec.ExpiresAt)
	}
	return now < e.deadline
}

func (c *completedCache) put(key Key, rec *Record) {
	if rec.Status != StatusCompleted || rec.ExpiresAt.IsZero() || c.cap == 0 {
		return
	}
	var deadline time.Duration
	if c.now == nil {
		// The monotonic time is read first and the wall clock's distance to the expiry after it,
		// so the deadline is, if anything, earlier than the record's expiry.
		deadline = time.Since(c.base)
		deadline += time.Until(rec.ExpiresAt)
	}
	h, ok := hashKey(c.seed, key)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items[h]; e != nil {
		// The same key completed again (a replay read from the node), or another key of the
		// same hash: either way the newer record takes the slot.
		if e.used = sameKey(e.key, key); !e.used {
			e.key = append(Key(nil), key...)
		}
		e.rec, e.deadline = rec, deadline
		return
	}
	e := &cacheEntry{hash: h, key: append(Key(nil), key...), rec: rec, deadline: deadline}
	if len(c.ring) < c.cap {
		e.slot = len(c.ring)
		c.ring = append(c.ring, e)
	} else {
		e.slot = c.victim()
		delete(c.items, c.ring[e.slot].hash)
		c.ring[e.slot] = e
		c.hand = (e.slot + 1) % len(c.ring)
	}
	c.items[h] = e
}

// victim returns the slot of the entry to evict: the first unmarked one from the hand on.
// It ends within one turn of the ring plus one slot, as the first turn unmarks every entry.
func (c *completedCache) victim() int {
	for {
		e := c.ring[c.hand]
		if !e.used {
			return c.hand
		}
		e.used = false
		c.hand = (c.hand + 1) % len(c.ring)
	}
}

// remove forgets e; the last entry of the ring takes its slot.
func (c *completedCache) remove(e *cacheEntry) {
	delete(c.items, e.hash)
	last := len(c.ring) - 1
	moved := c.ring[last]
	c.ring[e.slot], moved.slot = moved, e.slot
	c.ring[last] = nil
	c.ring = c.ring[:last]
	if c.hand >= len(c.ring) {
		c.hand = 0
	}
}

// drop forgets key: its record was released or deleted by an operator.
func (c *completedCache) drop(key Key) {
	h, ok := hashKey(c.seed, key)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.items[h]; e != nil && sameKey(e.key, key) {
		c.remove(e)
	}
}

func (c *completedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ring)
}
