package httpidem

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cassdedup/cassdedup/lwt"
)

func TestStatusMapsTheStoresErrors(t *testing.T) {
	for err, want := range map[error]int{
		lwt.ErrInvalidKey:                          http.StatusBadRequest,
		errKeyMalformed:                            http.StatusBadRequest,
		&lwt.InProgressError{}:                     http.StatusConflict,
		fmt.Errorf("wrapped: %w", lwt.ErrKeyReuse): http.StatusUnprocessableEntity,
		lwt.ErrOutcomeUnknown:                      http.StatusServiceUnavailable,
	} {
		code, ok := Status(err)
		assert.True(t, ok, "%v", err)
		assert.Equal(t, want, code, "%v", err)
	}
	for _, err := range []error{nil, errors.New("other"), lwt.ErrResultTooLarge} {
		_, ok := Status(err)
		assert.False(t, ok, "%v", err)
	}
}
