// Package textcheck validates the caller-supplied names and ids that become partition-key
// values, so every package rejects the same bad input with the same words.
package textcheck

import (
	"fmt"
	"unicode/utf8"
)

// Problem returns why s is not a usable key value — empty, longer than max bytes, or not valid
// UTF-8 (Cassandra's text type rejects it) — or "" when it is usable.
func Problem(s string, max int) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > max:
		return fmt.Sprintf("%d bytes, the limit is %d", len(s), max)
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	return ""
}

// Check returns nil when s is usable, otherwise an error wrapping sentinel that names what s is.
func Check(sentinel error, what, s string, max int) error {
	if p := Problem(s, max); p != "" {
		return fmt.Errorf("%w: %s: %s", sentinel, what, p)
	}
	return nil
}
