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
