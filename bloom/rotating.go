package bloom

import (
	"time"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// Rotating is a concurrency-safe Bloom filter whose keys age out. The retention is divided into
// k windows (WithGenerations); the filter keeps k+1 generations, adds to the current one, and
// drops the oldest as the clock enters a new window, so a key is remembered for at least one
// retention and at most one retention plus one window. Each generation is sized for the keys of
// one window at rate/(k+1), so the union stays at the target rate under a steady stream of
// WithExpectedItems keys per retention. Rotation happens lazily, per shard, on the next call
// after a window ends: no goroutine runs. All methods are safe for concurrent use.
type Rotating struct {
	c         *core
	retention time.Duration
}

// NewRotating returns a Rotating filter. WithExpectedItems is the number of keys added per
// retention; WithRetention should be the TTL of the table the filter stands in front of plus the
// longest time between checking a key and writing it.
func NewRotating(opts ...RotatingOption) (*Rotating, error) {
	cfg, err := newConfig(optcheck.Unwrap(opts, RotatingOption.rotatingOption))
	if err != nil {
		return nil, err
	}
	return newRotating(&cfg)
}

func newRotating(cfg *config) (*Rotating, error) {
	k := uint64(cfg.generations)
	s, err := cfg.size(cfg.generations+1, (cfg.items+k-1)/k)
	if err != nil {
		return nil, err
	}
	// Round the window up so that generations*window is never shorter than the retention.
	g := time.Duration(cfg.generations)
	window := (cfg.retention + g - 1) / g
	return &Rotating{c: newCore(s, window, cfg.now), retention: cfg.retention}, nil
}

// Test reports whether key may have been added within the retention.
func (r *Rotating) Test(key string) bool { return r.c.test(key) }

// Add records key as added now.
func (r *Rotating) Add(key string) { r.c.testOrAdd(key) }

// TestOrAdd records key as added now and reports whether it may have been added within the
// retention. Of several goroutines adding the same key concurrently, exactly one gets false.
func (r *Rotating) TestOrAdd(key string) bool {
	seen, _ := r.c.testOrAdd(key)
	return seen
}

// AddAt records key as added at t, which must be no earlier than the key was written (for a
// time-bucketed table, the end of the key's bucket), so the key ages out no earlier than its
// row. It reports false, and records nothing, when t is older than the retention. A zero t means
// now.
func (r *Rotating) AddAt(key string, t time.Time) bool {
	now := r.c.now()
	if t.IsZero() {
		t = now
	}
	return r.c.addAt(key, t, now)
}

// Reset forgets every key.
func (r *Rotating) Reset() { r.c.reset() }

// Fill is the fraction of bits set over all generations, in [0, 1].
func (r *Rotating) Fill() float64 { return r.c.fill() }

// EstimatedFalsePositiveRate estimates, from the bits actually set, the probability that a key
// not added within the retention tests as present in some generation.
func (r *Rotating) EstimatedFalsePositiveRate() float64 { return r.c.fpRate() }

// MemoryBytes is the size of the bit arrays of all generations.
func (r *Rotating) MemoryBytes() int64 { return r.c.memoryBytes() }

// Window is the time one generation covers: the retention divided by WithGenerations.
func (r *Rotating) Window() time.Duration { return r.c.window }

// Generations is the number of live generations: WithGenerations plus the current one.
func (r *Rotating) Generations() int { return len(r.c.shards[0].gens) }

// Retention is the shortest time a key is remembered.
func (r *Rotating) Retention() time.Duration { return r.retention }
