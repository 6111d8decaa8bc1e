package events

import (
	"github.com/cassdedup/cassdedup/internal/countername"
	"github.com/cassdedup/cassdedup/internal/textcheck"
)

// Limits on caller-supplied names. Keys are bounded so every partition key stays far below
// Cassandra's 64 KiB limit and rows stay small.
const (
	// MaxCounterLength is the longest counter name accepted, in bytes.
	MaxCounterLength = countername.MaxLength
	// MaxEventIDLength is the longest event id accepted, in bytes.
	MaxEventIDLength = 256
)

// ValidateCounter reports whether name is a usable counter name: non-empty UTF-8 of at most
// MaxCounterLength bytes, without control characters: a tool that ends a name at a NUL or a
// line break would show "c\x00d" as counter "c". The error wraps ErrInvalidCounter.
func ValidateCounter(name string) error {
	return countername.Validate(name)
}

// ValidateEventID reports whether id is a usable event id: non-empty UTF-8 of at most
// MaxEventIDLength bytes. The error wraps ErrInvalidEventID.
func ValidateEventID(id string) error {
	return textcheck.Check(ErrInvalidEventID, "event id", id, MaxEventIDLength)
}
