package countername_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/countername"
)

func TestValidate(t *testing.T) {
	for _, bad := range []string{"", strings.Repeat("x", countername.MaxLength+1), "\xff"} {
		if err := countername.Validate(bad); !errors.Is(err, countername.ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := countername.Validate(strings.Repeat("x", countername.MaxLength)); err != nil {
		t.Errorf("a name of MaxLength bytes refused: %v", err)
	}
}
