package enumname

import "testing"

type kind int

type small uint8

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Of(kind(1), "kind", "", "one", "two"), "one"},
		{Of(kind(2), "kind", "", "one", "two"), "two"},
		{Of(kind(0), "kind", "", "one", "two"), "kind(0)"},
		{Of(kind(3), "kind", "", "one", "two"), "kind(3)"},
		{Of(kind(-1), "kind", "", "one", "two"), "kind(-1)"},
		{Of(small(0), "small", "zero"), "zero"},
		{Of(small(255), "small", "zero"), "small(255)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
