package argcheck

import (
	"context"
	"errors"
	"testing"
)

var errBad = errors.New("bad")

func TestCall(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		nilReceiver bool
		ctx         context.Context
		want        string
	}{
		"fine":         {false, ctx, ""},
		"nil receiver": {true, ctx, "bad: nil *x.T"},
		"nil context":  {false, nil, "bad: nil context"},
		"nil both":     {true, nil, "bad: nil *x.T"},
	} {
		err := Call(errBad, "*x.T", tc.nilReceiver, tc.ctx)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, errBad) || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q wrapping errBad", name, err, tc.want)
		}
	}
}

func TestEach(t *testing.T) {
	errs := Each(errBad, 3)
	if len(errs) != 3 {
		t.Fatalf("got %d errors", len(errs))
	}
	for _, err := range errs {
		if !errors.Is(err, errBad) {
			t.Errorf("got %v", err)
		}
	}
}
