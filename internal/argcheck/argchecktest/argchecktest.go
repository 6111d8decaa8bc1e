// Package argchecktest holds the test of argcheck's contract that every package runs on its
// own types: each exported method refuses a nil receiver and a nil context.
package argchecktest

import (
	"context"
	"errors"
	"testing"
)

// Refused calls each of calls on a nil receiver and, on valid, with a nil context, and fails t
// unless every call returns an error matching sentinel. A call that panics fails the test too.
// valid should be built on a session that was never connected, so that a call that got past
// the check would fail differently.
func Refused[T any](t *testing.T, sentinel error, valid *T, calls map[string]func(context.Context, *T) error) {
	t.Helper()
	for name, call := range calls {
		if err := call(context.Background(), nil); !errors.Is(err, sentinel) {
			t.Errorf("%s on a nil receiver: got %v, want %v", name, err, sentinel)
		}
		if err := call(nil, valid); !errors.Is(err, sentinel) { //nolint:staticcheck // a nil context on purpose
			t.Errorf("%s with a nil context: got %v, want %v", name, err, sentinel)
		}
	}
}
