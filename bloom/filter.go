package bloom

// Filter is a concurrency-safe Bloom filter sharded over independently locked
// github.com/bits-and-blooms/bloom/v3 filters. It never forgets a key; use Rotating when keys must
// age out. All methods are safe for concurrent use.
type Filter struct {
	c *core
}

// New returns a Filter sized by WithExpectedItems and WithFalsePositiveRate, sharded by
// WithShards. Other options are an ErrInvalidOption.
func New(opts ...Option) (*Filter, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s, err := cfg.size(1, cfg.items)
	if err != nil {
		return nil, err
	}
	return &Filter{c: newCore(s, 0, nil)}, nil
}

// Test reports whether key may have been added. False means it certainly was not.
func (f *Filter) Test(key string) bool { return f.c.test(key) }

// Add records key.
func (f *Filter) Add(key string) { f.c.testOrAdd(key) }

// TestOrAdd records key and reports whether it may have been added before. Of several
// goroutines adding the same key concurrently, exactly one gets false.
func (f *Filter) TestOrAdd(key string) bool {
	seen, _ := f.c.testOrAdd(key)
	return seen
}

// Reset forgets every key.
func (f *Filter) Reset() { f.c.reset() }

// Fill is the fraction of bits set, in [0, 1]; about one half at the expected number of items.
func (f *Filter) Fill() float64 { return f.c.fill() }

// EstimatedFalsePositiveRate estimates, from the bits actually set, the probability that a key
// never added tests as present.
func (f *Filter) EstimatedFalsePositiveRate() float64 { return f.c.fpRate() }

// MemoryBytes is the size of the filter's bit arrays.
func (f *Filter) MemoryBytes() int64 { return f.c.memoryBytes() }

// Shards is the number of independently locked shards.
func (f *Filter) Shards() int { return len(f.c.shards) }
