package counters

import (
	"errors"

	"github.com/cassdedup/cassdedup/internal/countername"
	"github.com/cassdedup/cassdedup/internal/textcheck"
)

// Errors returned by the package, checked with errors.Is; returned errors wrap them with the
// offending value. A claim that may or may not have applied matches lwt.ErrOutcomeUnknown (a
// *cas.OutcomeUnknownError with the driver's error); nothing was incremented by that call, and
// a retry of the same operation is safe.
var (
	// ErrInvalidCounter is returned for an empty, over-long or non-UTF-8 counter name. It is
	// events.ErrInvalidCounter: a counter's name is the same in both packages.
	ErrInvalidCounter = countername.ErrInvalid
	// ErrInvalidOpID is returned for an empty, over-long or non-UTF-8 operation id.
	ErrInvalidOpID = errors.New("counters: invalid operation id")
	// ErrInvalidOption is returned for an option or argument out of range.
	ErrInvalidOption = errors.New("counters: invalid option")
	// ErrOpReuse is returned when an operation id was claimed with a different delta.
	ErrOpReuse = errors.New("counters: operation id reused with a different delta")
	// ErrUnconfirmed is returned when an operation is claimed but not marked applied: the
	// increment may or may not have happened (see the package documentation). Retrying does
	// not help; ListUnapplied reports the operation for repair.
	ErrUnconfirmed = errors.New("counters: operation claimed but not confirmed")
	// ErrNotPending is returned by Settle for an operation that is not claimed-but-unmarked
	// (any more): applied, released, expired, or settled by someone else meanwhile.
	ErrNotPending = errors.New("counters: operation is not pending")
)

// Limits on caller-supplied names, keeping partition keys small.
const (
	// MaxCounterLength is the longest counter name accepted, in bytes.
	MaxCounterLength = countername.MaxLength
	// MaxOpIDLength is the longest operation id accepted, in bytes.
	MaxOpIDLength = 256
)

// ValidateCounter reports whether name is a usable counter name: non-empty UTF-8 of at most
// MaxCounterLength bytes. The error wraps ErrInvalidCounter.
func ValidateCounter(name string) error {
	return countername.Validate(name)
}

// ValidateOpID reports whether id is a usable operation id: non-empty UTF-8 of at most
// MaxOpIDLength bytes. The error wraps ErrInvalidOpID.
func ValidateOpID(id string) error {
	return textcheck.Check(ErrInvalidOpID, "operation id", id, MaxOpIDLength)
}
