package lwt

import (
	"errors"
	"net/http"
)

// HTTPStatus maps an error of Store.Begin or ExecuteOnce to the status code the IETF
// Idempotency-Key header draft (draft-ietf-httpapi-idempotency-key-header) expects, for an HTTP
// middleware built on this package:
//
//   - ErrInvalidKey (missing, empty or malformed key): 400 Bad Request;
//   - ErrInProgress (a request with the key is still being processed): 409 Conflict;
//   - ErrKeyReuse (the key was used with a different request payload): 422 Unprocessable Content.
//
// ok is false for other errors, which are the server's own (typically 500, or 503 with
// Retry-After for ErrOutcomeUnknown). The middleware flow is: Begin → a Claim (run the
// handler, then Complete with the encoded response, Fail to store a 4xx for replay, or Release
// on a 5xx so the client's retry runs again) or a final Record (replay the stored response) or
// one of the errors above.
func HTTPStatus(err error) (code int, ok bool) {
	switch {
	case errors.Is(err, ErrInvalidKey):
		return http.StatusBadRequest, true
	case errors.Is(err, ErrInProgress):
		return http.StatusConflict, true
	case errors.Is(err, ErrKeyReuse):
		return http.StatusUnprocessableEntity, true
	}
	return 0, false
}
