// Package enumname names the values of the library's enumerations one way: a value's name, or
// Type(n) for a value that has none, as fmt would print an unknown value. It holds no state;
// Of is safe for concurrent use.
package enumname

import "fmt"

// Of returns the name of v: names[v], or typ(v) when v has none there (it is negative, past the
// end of names, or named ""). An enumeration that starts at 1 gives "" as names[0], so that its
// zero value prints as typ(0).
func Of[E ~int | ~uint8](v E, typ string, names ...string) string {
	if i := int(v); i >= 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}
