// Package countername defines what a counter name is, once for counters and events: a counter
// store can shadow its increments into an event log under the same name, so both must accept
// and refuse the same names, with one sentinel that either package's callers can test for.
package countername

import (
	"errors"

	"github.com/cassdedup/cassdedup/internal/textcheck"
)

// MaxLength is the longest counter name accepted, in bytes: far below Cassandra's 64 KiB
// partition-key limit.
const MaxLength = 256

// ErrInvalid is returned, wrapped with the reason, for an empty, over-long or non-UTF-8
// counter name. counters.ErrInvalidCounter and events.ErrInvalidCounter are this value.
var ErrInvalid = errors.New("invalid counter name")

// Validate returns nil for a usable counter name, otherwise an error wrapping ErrInvalid.
func Validate(name string) error { return textcheck.Check(ErrInvalid, "counter", name, MaxLength) }
