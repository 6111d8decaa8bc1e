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
}

type cacheEntry struct {
	key string
	rec *Record
}

func newCompletedCache(capacity int) *completedCache {
	return &completedCache{cap: capacity, order: list.New(), items: make(map[string]*list.Element, capacity)}
}

func (c *completedCache) get(key string, now time.Time) *Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.rec.ExpiresAt) {
		c.order.Remove(el)
		delete(c.items, key)
		return nil
	}
	c.order.MoveToFront(el)
	return e.rec
}

func (c *completedCache) put(key string, rec *Record) {
	if rec.Status != StatusCompleted || rec.ExpiresAt.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheEntry).rec = rec
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, rec: rec})
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
