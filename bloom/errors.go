package bloom

import "errors"

// Sentinel errors. Constructors wrap the sizing ones with the offending value, so check them
// with errors.Is.
var (
	// ErrInvalidItems: the expected number of items is zero, or the filter it asks for is larger
	// than this package will allocate.
	ErrInvalidItems = errors.New("bloom: invalid expected items")
	// ErrInvalidFPRate: the target false-positive rate is not in (0, 1), or so small that the
	// filter would need more hash functions than this package supports.
	ErrInvalidFPRate = errors.New("bloom: invalid false-positive rate")
	// ErrInvalidShards: the shard count is not a power of two in [1, 4096].
	ErrInvalidShards = errors.New("bloom: invalid shard count")
	// ErrInvalidRetention: the retention is not positive, or shorter than one nanosecond per
	// generation.
	ErrInvalidRetention = errors.New("bloom: invalid retention")
	// ErrInvalidGenerations: the generation count is not in [1, 64].
	ErrInvalidGenerations = errors.New("bloom: invalid generation count")
	// ErrInvalidOption: an option is nil, or its value is out of range (a nil clock, a warm-up
	// limit of zero). An option of another constructor does not compile.
	ErrInvalidOption = errors.New("bloom: invalid option")
	// ErrInvalidScope: a PreCheck was built without an ownership scope.
	ErrInvalidScope = errors.New("bloom: invalid scope")
	// ErrStaleEpoch: WarmUp was called with an epoch not greater than the current one, so the
	// caller's view of ownership is older than the PreCheck's.
	ErrStaleEpoch = errors.New("bloom: stale ownership epoch")
	// ErrOwnershipChanged: a warm-up was overtaken by Invalidate or a newer WarmUp.
	ErrOwnershipChanged = errors.New("bloom: ownership changed during warm-up")
	// ErrNilKeySource: WarmUp was given no key source.
	ErrNilKeySource = errors.New("bloom: nil key source")
	// ErrWarmUpLimit: the key source yielded more keys than the warm-up limit allows; the
	// PreCheck stays cold rather than answer from a filter far past its capacity.
	ErrWarmUpLimit = errors.New("bloom: warm-up key limit exceeded")
)
