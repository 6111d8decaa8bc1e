package optcheck

import (
	"errors"
	"testing"
	"time"
)

var errBad = errors.New("pkg: invalid option")

type config struct{ n int }

type option func(*config) error

func withN(n int) option {
	return func(c *config) error {
		if n < 0 {
			return Bad(errBad, Call("WithN", n), "must not be negative")
		}
		c.n = n
		return nil
	}
}

func TestBad(t *testing.T) {
	err := Bad(errBad, Call("WithTTL", -time.Second), "must be positive")
	if !errors.Is(err, errBad) || err.Error() != "pkg: WithTTL(-1s): must be positive" {
		t.Fatalf("got %v", err)
	}
	err = Bad(errors.New("plain"), Call("WithTables", "a", "b"), "bad")
	if err.Error() != `plain: WithTables("a", "b"): bad` {
		t.Fatalf("got %v", err)
	}
}

func TestApply(t *testing.T) {
	var c config
	if err := Apply(errBad, &c, []option{withN(3)}); err != nil || c.n != 3 {
		t.Fatalf("got %v, %d", err, c.n)
	}
	err := Apply(errBad, &c, []option{withN(1), withN(-1)})
	if !errors.Is(err, errBad) || err.Error() != "pkg: WithN(-1): must not be negative" {
		t.Fatalf("got %v", err)
	}
	err = Apply(errBad, &c, []option{withN(1), nil})
	if !errors.Is(err, errBad) || err.Error() != "pkg: option 1: nil" {
		t.Fatalf("got %v", err)
	}
}

func TestSet(t *testing.T) {
	withN := func(n int) option {
		return Set(errBad, n < 0, Call("WithN", n), "must not be negative", func(c *config) { c.n = n })
	}
	var c config
	if err := Apply(errBad, &c, []option{withN(2)}); err != nil || c.n != 2 {
		t.Fatalf("got %v, %d", err, c.n)
	}
	err := Apply(errBad, &c, []option{withN(-2)})
	if !errors.Is(err, errBad) || err.Error() != "pkg: WithN(-2): must not be negative" || c.n != 2 {
		t.Fatalf("got %v, %d", err, c.n)
	}
}

func TestBuild(t *testing.T) {
	var c config
	err := Build(errBad, true, "session", &c, []option{withN(-1)})
	if !errors.Is(err, errBad) || err.Error() != "pkg: invalid option: nil session" {
		t.Fatalf("got %v", err)
	}
	if err := Build(errBad, false, "session", &c, []option{withN(4)}); err != nil || c.n != 4 {
		t.Fatalf("got %v, %d", err, c.n)
	}
}

// wrapped is an option interface of the kind Unwrap serves: each option type has the method.
type wrapped interface{ fn() func(*int) error }

type setTo int

func (v setTo) fn() func(*int) error { return func(n *int) error { *n = int(v); return nil } }

// TestUnwrapKeepsOrderAndNil: Unwrap applies get to each option in order, and a nil option stays
// nil, so Apply refuses it by its index.
func TestUnwrapKeepsOrderAndNil(t *testing.T) {
	fns := Unwrap([]wrapped{setTo(1), nil, setTo(3)}, wrapped.fn)
	if len(fns) != 3 || fns[1] != nil {
		t.Fatalf("got %d functions, the second nil: %t; want 3, the second nil", len(fns), len(fns) > 1 && fns[1] == nil)
	}
	n := 0
	if err := Apply(errBad, &n, fns); !errors.Is(err, errBad) || err.Error() != "pkg: option 1: nil" {
		t.Fatalf("Apply: %v, want the nil option refused by its index", err)
	}
	if err := Apply(errBad, &n, Unwrap([]wrapped{setTo(1), setTo(3)}, wrapped.fn)); err != nil || n != 3 {
		t.Fatalf("Apply: %v, n = %d; want nil and 3", err, n)
	}
}
