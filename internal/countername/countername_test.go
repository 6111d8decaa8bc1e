package countername_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"

	"github.com/cassdedup/cassdedup/internal/countername"
)

func TestValidate(t *testing.T) {
	for _, bad := range []string{"", strings.Repeat("x", countername.MaxLength+1), "\xff",
		"c\x00d", "c\nd", "c\x1b[2Jd", "c\x7f", "c\u0085d"} {
		if err := countername.Validate(bad); !errors.Is(err, countername.ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := countername.Validate(strings.Repeat("x", countername.MaxLength)); err != nil {
		t.Errorf("a name of MaxLength bytes refused: %v", err)
	}
}

// FuzzValidate: a name Validate accepts holds no control character, so no tool that ends a name
// at a NUL or a line break shows it as another counter.
func FuzzValidate(f *testing.F) {
	f.Add("c\x00d")
	f.Add("views:home")
	f.Fuzz(func(t *testing.T, name string) {
		if countername.Validate(name) == nil && strings.IndexFunc(name, unicode.IsControl) >= 0 {
			t.Fatalf("Validate(%q) accepted a control character", name)
		}
	})
}
