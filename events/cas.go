package events

import (
	"errors"
	"fmt"

	"github.com/gocql/gocql"
)

// mapScanCAS runs a conditional statement and returns whether it applied and the current
// values Cassandra sent back. gocql v1.7.0's MapScanCAS asserts the [applied] column without
// checking it; a malformed result becomes an error here instead of a panic.
func mapScanCAS(q *gocql.Query) (applied bool, current map[string]any, err error) {
	current = make(map[string]any)
	defer func() {
		if r := recover(); r != nil {
			applied, err = false, fmt.Errorf("%w: malformed conditional-write result: %v", ErrOutcomeUnknown, r)
		}
	}()
	applied, err = q.MapScanCAS(current)
	return applied, current, err
}

// outcomeUnknown reports whether err leaves a conditional write's outcome undecided: a Paxos
// write timeout, or no response at all. The write may have applied.
func outcomeUnknown(err error) bool {
	var wt *gocql.RequestErrWriteTimeout
	if errors.As(err, &wt) {
		return wt.WriteType == "CAS"
	}
	return errors.Is(err, gocql.ErrTimeoutNoResponse)
}
