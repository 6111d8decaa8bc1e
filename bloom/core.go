package bloom

import (
	"math"
	"math/bits"
	"sync"
	"time"

	bbloom "github.com/bits-and-blooms/bloom/v3"
)

// core is the sharded, generational filter behind Filter and Rotating. Each shard has its own
// lock and its own generations, so goroutines working on different keys rarely meet, and one
// key's check-and-set across all generations is atomic under one lock.
type core struct {
	shards     []shard
	shardShift uint
	m          uint64
	k          int

	// Rotation. window is 0 for a Filter, which never rotates and never reads the clock.
	window time.Duration
	origin time.Time
	now    func() time.Time
}

// shard is padded so that the locks of neighbouring shards do not share a cache line.
type shard struct {
	mu   sync.Mutex
	slot int64                 // the clock window gens[0] belongs to
	gens []*bbloom.BloomFilter // gens[0] takes adds; gens[i] holds window slot-i
	_    [64]byte
}

func newCore(s sizing, window time.Duration, now func() time.Time) *core {
	c := &core{
		shards:     make([]shard, s.shards),
		shardShift: uint(64 - bits.TrailingZeros(uint(s.shards))),
		m:          s.m,
		k:          s.k,
		window:     window,
		now:        now,
	}
	if window > 0 {
		c.origin = now()
	}
	for i := range c.shards {
		gens := make([]*bbloom.BloomFilter, s.gens)
		for g := range gens {
			gens[g] = bbloom.New(uint(s.m), uint(s.k))
		}
		c.shards[i].gens = gens
	}
	return c
}

// slotOf is the rotation window t falls in, counted from the filter's origin.
func (c *core) slotOf(t time.Time) int64 {
	d := t.Sub(c.origin)
	s := int64(d / c.window)
	if d < 0 && d%c.window != 0 {
		s-- // floor, not truncation, for times before the origin
	}
	return s
}

// lock locks shard i and, for a rotating filter, first moves it to the current window. Rotation
// is lazy and per shard, so no goroutine is needed and a key is always added to the generation
// of the window it was added in, even while other shards have not rotated yet.
func (c *core) lock(i int) *shard {
	if c.window == 0 {
		s := &c.shards[i]
		s.mu.Lock()
		return s
	}
	return c.lockAt(i, c.now())
}

// lockAt is lock with the clock already read. A now older than the real time is safe: the
// shard rotates later, so keys are kept longer, never dropped sooner.
func (c *core) lockAt(i int, now time.Time) *shard {
	s := &c.shards[i]
	s.mu.Lock()
	if c.window > 0 {
		s.advance(c.slotOf(now))
	}
	return s
}

// advance drops the generations older than the live ones and reuses their bits for new windows.
// Only moving forward is possible: a clock that steps back leaves keys in place longer, which
// costs false positives, never a forgotten key.
func (s *shard) advance(slot int64) {
	d := slot - s.slot
	if d <= 0 {
		return
	}
	g := len(s.gens)
	for range min(d, int64(g)) {
		oldest := s.gens[g-1]
		copy(s.gens[1:], s.gens[:g-1])
		oldest.ClearAll()
		s.gens[0] = oldest
	}
	s.slot = slot
}

func (c *core) test(key string) bool {
	var p positions
	c.locate(key, &p)
	s := c.lock(p.shard)
	defer s.mu.Unlock()
	for _, g := range s.gens {
		if c.has(g, &p) {
			return true
		}
	}
	return false
}

// testOrAdd reports whether key may have been seen, and records it in the current generation
// either way, so that it lives one full retention from now even when an older generation (or a
// false positive) answered for it. It also returns the shard, which callers use to stripe their
// own counters.
func (c *core) testOrAdd(key string) (seen bool, shardIdx int) {
	var p positions
	c.locate(key, &p)
	s := c.lock(p.shard)
	seen = c.set(s.gens[0], &p)
	for _, g := range s.gens[1:] {
		if seen {
			break
		}
		seen = c.has(g, &p)
	}
	s.mu.Unlock()
	return seen, p.shard
}

// addAt records key in the generation of the window containing t, which callers guarantee is
// no earlier than the key's write, rotating first to now. It reports false when t is older than
// every live generation: such a key has aged out of the table too.
func (c *core) addAt(key string, t, now time.Time) bool {
	var p positions
	c.locate(key, &p)
	s := c.lockAt(p.shard, now)
	defer s.mu.Unlock()
	age := int64(0)
	if c.window > 0 {
		if c.slotOf(t) > s.slot {
			// t is past the now we were given (a stale batch clock, or the end of a bucket
			// still open): the key may belong to a later window, so rotate to the real now
			// before placing it. Never to t itself, which may be in the future.
			s.advance(c.slotOf(c.now()))
		}
		age = max(s.slot-c.slotOf(t), 0)
	}
	if age >= int64(len(s.gens)) {
		return false
	}
	c.set(s.gens[age], &p)
	return true
}

// has reports whether all of p's bits are set in g.
func (c *core) has(g *bbloom.BloomFilter, p *positions) bool {
	b := g.BitSet()
	for _, i := range p.bit[:c.k] {
		if !b.Test(uint(i)) {
			return false
		}
	}
	return true
}

// set sets p's bits in g and reports whether they were all set already.
func (c *core) set(g *bbloom.BloomFilter, p *positions) (wasSet bool) {
	b := g.BitSet()
	wasSet = true
	for _, i := range p.bit[:c.k] {
		if !b.Test(uint(i)) {
			wasSet = false
			b.Set(uint(i))
		}
	}
	return wasSet
}

func (c *core) reset() {
	for i := range c.shards {
		s := c.lock(i)
		for _, g := range s.gens {
			g.ClearAll()
		}
		s.mu.Unlock()
	}
}

// fill is the fraction of bits set over every shard and generation.
func (c *core) fill() float64 { f, _ := c.occupancy(); return f }

// fpRate estimates, from the bits set, the probability that a key never added tests present.
func (c *core) fpRate() float64 { _, p := c.occupancy(); return p }

// occupancy is the filter's fill (set bits over all bits) and its estimated false-positive rate:
// a never-seen key lands on one shard, and is a false positive there if all its k bits are set in
// any generation, so the estimate is the mean over shards of 1 - prod_g (1 - fill_g^k).
func (c *core) occupancy() (fill, fpRate float64) {
	var set, total float64
	for i := range c.shards {
		s := c.lock(i)
		miss := 1.0
		for _, g := range s.gens {
			n := float64(g.BitSet().Count())
			set += n
			total += float64(c.m)
			miss *= 1 - math.Pow(n/float64(c.m), float64(c.k))
		}
		s.mu.Unlock()
		fpRate += 1 - miss
	}
	return set / total, fpRate / float64(len(c.shards))
}

// memoryBytes is the size of the bit arrays, which dominate: m bits rounded up to whole words.
func (c *core) memoryBytes() int64 {
	words := (c.m + 63) / 64
	return int64(words) * 8 * int64(len(c.shards)) * int64(len(c.shards[0].gens))
}
