// Package argcheck refuses the nil arguments that would otherwise panic deep inside a call (a
// nil receiver, a nil context), so every exported method answers them with the same typed error
// and the same words. It holds no state; its functions are safe for concurrent use.
package argcheck

import (
	"context"
	"fmt"
)

// Call returns nil when a method may run, otherwise an error wrapping sentinel: when
// nilReceiver is true (the method was called on a nil pointer, named by receiver) or ctx is nil.
// A nil context is refused rather than replaced: it is a bug in the caller, and a substitute
// would run the call without the deadline the caller meant to give it.
func Call(sentinel error, receiver string, nilReceiver bool, ctx context.Context) error {
	switch {
	case nilReceiver:
		return fmt.Errorf("%w: nil %s", sentinel, receiver)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", sentinel)
	}
	return nil
}

// Each returns n copies of err: the per-item errors of a batch call refused as a whole.
func Each(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}
