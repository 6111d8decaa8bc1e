package bloom

import (
	"fmt"
	"math"
	"time"

	bbloom "github.com/bits-and-blooms/bloom/v3"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// Defaults for the options below. They are constants, not settings: every instance holds its own
// copy of its configuration.
const (
	// DefaultExpectedItems is the number of keys a filter is sized for: for a Rotating filter
	// or a PreCheck, the keys added during one retention window.
	DefaultExpectedItems = 1_000_000
	// DefaultFalsePositiveRate is the target probability that a never-seen key is answered
	// "maybe seen". For a Rotating filter it is the target for the union of its generations.
	DefaultFalsePositiveRate = 0.01
	// DefaultRetention is the horizon a filter remembers keys for (1 h): a pre-check vouches
	// only for operations within it, and everything older takes the LWT path (see lwt.Store.Own),
	// so memory grows with rate x horizon, not with the table's retention.
	DefaultRetention = time.Hour
	// DefaultGenerations is the number of windows the retention is divided into.
	DefaultGenerations = 4
	// DefaultMaxShards is the most shards the default sizing uses; fewer are used when each
	// shard would hold under minItemsPerShard keys.
	DefaultMaxShards = 64

	minItemsPerShard = 1024
	maxShards        = 4096
	maxGenerations   = 64
	maxHashes        = 64      // the size of the stack array that holds one key's bit positions
	maxTotalBits     = 1 << 38 // 32 GiB of filter: beyond this a sizing is a mistake, not a plan
)

// Option configures a Filter, a Rotating filter and a PreCheck alike (the keys it is sized for,
// its false-positive rate, its shards): New, NewRotating and NewPreCheck each accept it. A bad
// value makes the constructor fail with an error that names the option.
type Option func(*config) error

// RotatingOption is what NewRotating accepts: an Option or a WindowOption.
type RotatingOption interface{ rotatingOption() Option }

// PreCheckOption is what NewPreCheck accepts: an Option, a WindowOption or a WarmUpOption.
type PreCheckOption interface{ preCheckOption() Option }

// WindowOption sets how keys age out (WithRetention, WithGenerations, WithClock): NewRotating and
// NewPreCheck accept it, and passing it to New, whose Filter never forgets, does not compile.
type WindowOption func(*config) error

// WarmUpOption bounds a PreCheck's warm-up (WithWarmUpLimit): only NewPreCheck accepts it.
type WarmUpOption func(*config) error

func (o Option) rotatingOption() Option       { return o }
func (o Option) preCheckOption() Option       { return o }
func (o WindowOption) rotatingOption() Option { return Option(o) }
func (o WindowOption) preCheckOption() Option { return Option(o) }
func (o WarmUpOption) preCheckOption() Option { return Option(o) }

type config struct {
	items       uint64
	fpRate      float64
	shards      int // 0: choose from the sizing
	retention   time.Duration
	generations int
	now         func() time.Time
	warmUpLimit uint64 // 0: twice items
}

// WithExpectedItems sizes the filter for n keys (default DefaultExpectedItems). For a Rotating
// filter or a PreCheck, n is the number of keys added per retention window.
func WithExpectedItems(n uint64) Option {
	return optcheck.Set(ErrInvalidItems, n == 0, "WithExpectedItems(0)", "no items",
		func(c *config) { c.items = n })
}

// WithFalsePositiveRate sets the target false-positive rate, in (0, 1) (default
// DefaultFalsePositiveRate).
func WithFalsePositiveRate(p float64) Option {
	return optcheck.Set(ErrInvalidFPRate, !(p > 0 && p < 1), optcheck.Call("WithFalsePositiveRate", p), "not in (0, 1)",
		func(c *config) { c.fpRate = p })
}

// WithShards sets the number of independently locked shards, a power of two in [1, 4096].
// By default it is DefaultMaxShards, halved until every shard expects at least 1024 keys.
func WithShards(n int) Option {
	return optcheck.Set(ErrInvalidShards, n < 1 || n > maxShards || n&(n-1) != 0, optcheck.Call("WithShards", n), fmt.Sprintf("not a power of two in [1, %d]", maxShards),
		func(c *config) { c.shards = n })
}

// WithRetention sets how long a key is remembered at least: for a PreCheck, the horizon it
// vouches for (default DefaultRetention, 1 h). A store that owns a scope sends every operation
// older than the horizon, and every operation without a time of its own unless the horizon
// covers the table's whole TTL, to the LWT path, so a short horizon costs LWTs, never a
// duplicate. Rotating and PreCheck only.
func WithRetention(d time.Duration) WindowOption {
	return WindowOption(optcheck.Set(ErrInvalidRetention, d <= 0, optcheck.Call("WithRetention", d), "not positive",
		func(c *config) { c.retention = d }))
}

// WithGenerations divides the retention into k windows (default DefaultGenerations); the filter
// keeps k+1 generations so that a key is dropped no earlier than one retention after it was
// added. More generations age keys out more precisely and cost more memory. Rotating and
// PreCheck only.
func WithGenerations(k int) WindowOption {
	return WindowOption(optcheck.Set(ErrInvalidGenerations, k < 1 || k > maxGenerations, optcheck.Call("WithGenerations", k), fmt.Sprintf("not in [1, %d]", maxGenerations),
		func(c *config) { c.generations = k }))
}

// WithClock sets the clock that drives rotation (default time.Now). Rotating and PreCheck only.
func WithClock(now func() time.Time) WindowOption {
	return WindowOption(optcheck.Set(ErrInvalidOption, now == nil, "WithClock(nil)", "no clock",
		func(c *config) { c.now = now }))
}

// WithWarmUpLimit bounds the keys one warm-up may load (default twice the expected items), so
// that a warm-up costs bounded time and never answers from an overfull filter. PreCheck only.
func WithWarmUpLimit(n uint64) WarmUpOption {
	return WarmUpOption(optcheck.Set(ErrInvalidOption, n == 0, "WithWarmUpLimit(0)", "no keys",
		func(c *config) { c.warmUpLimit = n }))
}

func newConfig(opts []Option) (config, error) {
	c := config{
		items:       DefaultExpectedItems,
		fpRate:      DefaultFalsePositiveRate,
		retention:   DefaultRetention,
		generations: DefaultGenerations,
		now:         time.Now,
	}
	if err := optcheck.Apply(ErrInvalidOption, &c, opts); err != nil {
		return config{}, err
	}
	return c, c.validate()
}

// validate checks what no single option can, and fills in the defaults that depend on others.
func (c *config) validate() error {
	if c.retention/time.Duration(c.generations) == 0 {
		return optcheck.Bad(ErrInvalidRetention, optcheck.Call("WithRetention", c.retention),
			"shorter than one nanosecond for each of %d generations", c.generations)
	}
	if c.warmUpLimit == 0 {
		c.warmUpLimit = 2 * c.items
	}
	return nil
}

// sizing is the shape of one shard's generation: every generation of every shard has the same
// m and k, so one key's bit positions are computed once and tested in each.
type sizing struct {
	shards int
	gens   int    // live generations: 1 for a Filter, windows+1 for a Rotating filter
	m      uint64 // bits per shard per generation
	k      int    // hash functions
}

// size turns a validated config into a sizing. perGenItems is the keys one generation must hold
// and perGenFP the false-positive rate each generation gets, so that the union of gens
// generations stays at c.fpRate (1-(1-p)^g <= g*p).
func (c *config) size(gens int, perGenItems uint64) (sizing, error) {
	perGenFP := c.fpRate / float64(gens)
	bitsPerKey := -math.Log(perGenFP) / (math.Ln2 * math.Ln2)
	k := int(math.Ceil(math.Ln2 * bitsPerKey))
	if k > maxHashes {
		return sizing{}, fmt.Errorf("%w: %v needs %d hash functions (at most %d)", ErrInvalidFPRate, c.fpRate, k, maxHashes)
	}
	total := bitsPerKey * float64(perGenItems) * float64(gens)
	if total > maxTotalBits {
		return sizing{}, fmt.Errorf("%w: %d items at rate %v need %.0f bits (at most %d)", ErrInvalidItems, c.items, c.fpRate, total, uint64(maxTotalBits))
	}
	shards := c.shards
	if shards == 0 {
		shards = DefaultMaxShards
		for shards > 1 && perGenItems/uint64(shards) < minItemsPerShard {
			shards /= 2
		}
	}
	perShard := (perGenItems + uint64(shards) - 1) / uint64(shards)
	m, kk := bbloom.EstimateParameters(uint(perShard), perGenFP)
	return sizing{shards: shards, gens: gens, m: max(uint64(m), 64), k: max(int(kk), 1)}, nil
}
