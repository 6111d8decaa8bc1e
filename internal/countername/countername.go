// Package countername defines what a counter name is, once for counters and events: a counter
// store can shadow its increments into an event log under the same name, so both must accept
// and refuse the same names, with one sentinel that either package's callers can test for.
package countername

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cassdedup/cassdedup/internal/textcheck"
)

// MaxLength is the longest counter name accepted, in bytes: far below Cassandra's 64 KiB
// partition-key limit.
const MaxLength = 256

// ErrInvalid is returned, wrapped with the reason, for an empty, over-long or non-UTF-8
// counter name. counters.ErrInvalidCounter and events.ErrInvalidCounter are this value.
var ErrInvalid = errors.New("invalid counter name")

// Validate returns nil for a usable counter name, otherwise an error wrapping ErrInvalid: empty,
// over-long, not UTF-8, or holding a control character.
//
// Control characters are refused because a counter name leaves the library as text that other
// tools end at a NUL or split at a line break: a command line (an argument cannot hold a NUL),
// cqlsh, a log line or a metric label would show "c\x00d" as "c", the name of another counter,
// and an operator acting on it (a rollup, a repair) would act on that other counter.
func Validate(name string) error {
	if err := textcheck.Check(ErrInvalid, "counter", name, MaxLength); err != nil {
		return err
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("%w: counter: control character %U at byte %d", ErrInvalid, r, i)
	}
	return nil
}
