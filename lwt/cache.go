package lwt

import (
	"container/list"
	"sync"
	"time"
)

// completedCache is a bounded LRU of COMPLETED records, each dropped at its record's expiry.
// Only completed records are cached: their result never changes, so a hit is never stale.
type completedCache struct {
	mu    sync.Mutex
	cap   int
	order *list.List // front: most recently used
	items map[string]*list.Element
	// now is the store's clock when WithClock replaced time.Now. When it is nil, entries expire
	// by the monotonic clock, which costs one clock read per hit where time.Now costs two: on
	// some virtual machines that read is most of a hit's cost.
	now  func() time.Time
	base time.Time // the origin of the entries' monotonic deadlines
}

type cacheEntry struct {
	key      string
	rec      *Record
	deadline time.Duration // rec.ExpiresAt as time since base, when now is nil
}

func newCompletedCache(capacity int, now func() time.Time) *completedCache {
	return &completedCache{cap: capacity, order: list.New(), items: make(map[string]*list.Element, capacity),
		now: now, base: time.Now()}
}

// get returns the live record cached under key, the encoding of appendCacheKey. It takes the
// encoding as bytes so that a lookup from a stack buffer allocates nothing.
func (c *completedCache) get(key []byte) *Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[string(key)]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if !c.live(e) {
		c.order.Remove(el)
		delete(c.items, e.key)
		return nil
	}
	c.order.MoveToFront(el)
	return e.rec
}

func (c *completedCache) live(e *cacheEntry) bool {
	if c.now != nil {
		return c.now().Before(e.rec.ExpiresAt)
	}
	return time.Since(c.base) < e.deadline
}

func (c *completedCache) put(key string, rec *Record) {
	if rec.Status != StatusCompleted || rec.ExpiresAt.IsZero() {
		return
	}
	var deadline time.Duration
	if c.now == nil {
		deadline = time.Since(c.base) + time.Until(rec.ExpiresAt)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*cacheEntry)
		e.rec, e.deadline = rec, deadline
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, rec: rec, deadline: deadline})
	if c.order.Len() > c.cap {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

func (c *completedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
