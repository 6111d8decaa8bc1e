package cas

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrOutcomeUnknown: a conditional write may or may not have applied. The driver could not
	// report its outcome (a CAS write timeout, no response, a lost connection, ctx ending
	// mid-flight) and, in Resolve, serial reads within the patience could not tell. An
	// *OutcomeUnknownError matches it and carries the driver's error. lwt.ErrOutcomeUnknown is
	// the same value.
	ErrOutcomeUnknown = errors.New("cas: outcome unknown")

	// ErrMalformedResult: a conditional statement returned no boolean [applied] column, which
	// happens when the statement was not conditional at all.
	ErrMalformedResult = errors.New("cas: malformed CAS result")

	// ErrInvalidArgument: a nil context, statement or batch, or a serial consistency that is not
	// SERIAL or LOCAL_SERIAL. Nothing was sent.
	ErrInvalidArgument = errors.New("cas: invalid argument")
)

// OutcomeUnknownError reports a write whose outcome could not be learnt: the driver could not
// report it (a CAS write timeout, a client-side timeout, a connection lost after the request
// was sent, ctx ending mid-flight) and reading it back failed too. It matches
// ErrOutcomeUnknown and unwraps to the driver's error (and the read's, when one was made).
type OutcomeUnknownError struct {
	Op  string // the statement kind, e.g. "claim" or "complete"
	Err error  // the driver's error
}

// Error describes the error.
func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("cas: outcome unknown: %s: %v", e.Op, e.Err)
}

// Unwrap returns ErrOutcomeUnknown and the driver's error, so both match with errors.Is/As.
func (e *OutcomeUnknownError) Unwrap() []error { return []error{ErrOutcomeUnknown, e.Err} }
