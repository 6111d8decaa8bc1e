package clock

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrOffset: the component's offset from the cluster's clock is not known within the limit
	// its caller needs (never measured, every measurement failed, or its bound is wider): the
	// caller refuses what it would have judged by its clock. An *OffsetError matches it.
	ErrOffset = errors.New("clock: offset from the cluster's clock not known within the limit")

	// ErrInvalidOption: a nil session, a nil option or one out of range. Nothing was built.
	ErrInvalidOption = errors.New("clock: invalid option")
)

// OffsetError reports a refusal: the reading the caller had, and the limit its bound exceeded.
// It matches ErrOffset and unwraps to the last measurement's error, if one failed.
type OffsetError struct {
	Offset   time.Duration // the cluster's clock minus the component's, as last measured
	Bound    time.Duration // how far the true offset may be from Offset
	Limit    time.Duration // the bound the caller needs
	Age      time.Duration // since the last measurement
	Measured bool          // false: no measurement ever succeeded
	Err      error         // the last measurement's error, if it failed
}

// Error describes the refusal with its figures.
func (e *OffsetError) Error() string {
	if !e.Measured {
		return fmt.Sprintf("clock: offset from the cluster's clock never measured (limit ±%v): %v", e.Limit, e.Err)
	}
	s := fmt.Sprintf("clock: offset from the cluster's clock %v ±%v, measured %v ago, exceeds the limit ±%v",
		e.Offset.Round(time.Millisecond), e.Bound.Round(time.Millisecond), e.Age.Round(time.Millisecond), e.Limit)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrOffset and the measurement's error, so both match with errors.Is/As.
func (e *OffsetError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrOffset}
	}
	return []error{ErrOffset, e.Err}
}
