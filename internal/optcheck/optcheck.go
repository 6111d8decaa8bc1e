// Package optcheck gives every package's options one way to refuse a value: an error that names
// the option as it was called (`counters: WithRetention(-1s): must be 1m..90d`) and wraps the
// package's errors.Is-able sentinel. It holds no state; its functions are safe for concurrent use.
package optcheck

import (
	"fmt"
	"strings"
)

// refused is a bad option: the call that was made, why it was refused, and the sentinel it matches.
type refused struct {
	sentinel  error
	call, why string
}

// Error reads "<package>: <call>: <why>", the package being the sentinel's prefix.
func (e *refused) Error() string {
	pkg, _, found := strings.Cut(e.sentinel.Error(), ": ")
	if !found {
		pkg = e.sentinel.Error()
	}
	return pkg + ": " + e.call + ": " + e.why
}

// Unwrap returns the sentinel, so errors.Is matches it.
func (e *refused) Unwrap() error { return e.sentinel }

// Bad returns the error of an option refused: call is the option as written (see Call), the
// format and args say why.
func Bad(sentinel error, call, format string, args ...any) error {
	return &refused{sentinel: sentinel, call: call, why: fmt.Sprintf(format, args...)}
}

// Call writes an option's call with its arguments, strings quoted: Call("WithTables", "a", "b")
// is `WithTables("a", "b")`.
func Call(name string, args ...any) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		if s, ok := a.(string); ok {
			fmt.Fprintf(&b, "%q", s)
		} else {
			fmt.Fprint(&b, a)
		}
	}
	b.WriteByte(')')
	return b.String()
}

// Apply applies opts to c in order and returns the first refusal; a nil option is refused as
// `option N: nil`, N counting from 0.
func Apply[C any, O ~func(*C) error](sentinel error, c *C, opts []O) error {
	for i, o := range opts {
		if o == nil {
			return Bad(sentinel, fmt.Sprintf("option %d", i), "nil")
		}
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}

// Set returns the option that applies set, or, when bad is true, refuses: call names the
// option as written (see Call) and why says what is wrong. Most options are one Set.
func Set[C any](sentinel error, bad bool, call, why string, set func(*C)) func(*C) error {
	return func(c *C) error {
		if bad {
			return Bad(sentinel, call, "%s", why)
		}
		set(c)
		return nil
	}
}

// All reports whether check accepts every name: for options that take several names at once.
func All(check func(string) error, names ...string) bool {
	for _, n := range names {
		if check(n) != nil {
			return false
		}
	}
	return true
}

// Build is Apply for a constructor with a required argument: when missing is true it refuses
// first, as "nil <what>", before any option runs.
func Build[C any, O ~func(*C) error](sentinel error, missing bool, what string, c *C, opts []O) error {
	if missing {
		return fmt.Errorf("%w: nil %s", sentinel, what)
	}
	return Apply(sentinel, c, opts)
}

// Unwrap turns a constructor's options, of an interface type that each of its option types
// satisfies, into the functions that apply them, through get (the interface's method); a nil
// option stays nil, which Apply and Build refuse. It lets a package type its options per
// constructor (an option of another constructor does not compile) and apply them all alike.
func Unwrap[O comparable, F any](opts []O, get func(O) F) []F {
	var none O
	out := make([]F, len(opts))
	for i, o := range opts {
		if o != none {
			out[i] = get(o)
		}
	}
	return out
}
