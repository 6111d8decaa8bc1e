package textcheck

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var errBad = errors.New("bad")

func TestCheck(t *testing.T) {
	cases := map[string]string{"": "empty", "ok": "", strings.Repeat("x", 9): "9 bytes, the limit is 8", "\xff": "not valid UTF-8"}
	for in, want := range cases {
		if got := Problem(in, 8); got != want {
			t.Errorf("Problem(%q) = %q, want %q", in, got, want)
		}
		err := Check(errBad, "id", in, 8)
		if (err == nil) != (want == "") || (err != nil && !errors.Is(err, errBad)) {
			t.Errorf("Check(%q) = %v", in, err)
		}
	}
}

func FuzzProblem(f *testing.F) {
	f.Add("a", 4)
	f.Add("\xc3", 4)
	f.Fuzz(func(t *testing.T, s string, max int) {
		ok := Problem(s, max) == ""
		if ok != (s != "" && len(s) <= max && utf8.ValidString(s)) {
			t.Fatalf("Problem(%q, %d) disagrees with the rules", s, max)
		}
	})
}
