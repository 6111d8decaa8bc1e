package httpidem

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/cassdedup/cassdedup/lwt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrInvalidOption: an option passed to New is out of range or nil.
	ErrInvalidOption = errors.New("httpidem: invalid option")

	// ErrInvalidKey: the key header is empty, malformed, too short or too long.
	ErrInvalidKey = errors.New("httpidem: invalid idempotency key")

	// ErrNoScope: New was given no scope option (see New). It also matches ErrInvalidOption.
	ErrNoScope = errors.New("httpidem: no scope chosen")
)

// The "type" members of the problem documents the middleware answers with. Each names the
// constant that documents its case; they do not change between versions.
const (
	typeBase = "https://pkg.go.dev/github.com/cassdedup/cassdedup/httpidem#"

	// TypeKeyMissing (400): the method requires a key and the request has none.
	TypeKeyMissing = typeBase + "TypeKeyMissing"
	// TypeKeyInvalid (400): the key is empty, malformed, shorter than WithMinKeyLength or
	// longer than WithMaxKeyLength.
	TypeKeyInvalid = typeBase + "TypeKeyInvalid"
	// TypeUnauthenticated (401): WithPrincipalScope found no principal in the request's context,
	// or WithAuthorizationScope no Authorization header. Nothing was claimed. The service's
	// authentication, in front of the middleware, normally answers such a request first.
	TypeUnauthenticated = typeBase + "TypeUnauthenticated"
	// TypeBodyTooLarge (413): the request body exceeds WithMaxBodySize. Nothing was claimed.
	TypeBodyTooLarge = typeBase + "TypeBodyTooLarge"
	// TypeBodyUnreadable (400): reading the request body failed. Nothing was claimed.
	TypeBodyUnreadable = typeBase + "TypeBodyUnreadable"
	// TypeFingerprintFailed (400): the WithFingerprint function rejected the request.
	TypeFingerprintFailed = typeBase + "TypeFingerprintFailed"
	// TypeInProgress (409): a request with the key is still running; retry after Retry-After.
	TypeInProgress = typeBase + "TypeInProgress"
	// TypeKeyReuse (422): the key was used with another request (method, path, query or body).
	TypeKeyReuse = typeBase + "TypeKeyReuse"
	// TypeResponseNotStored (410): the request with the key was processed, but its response was
	// too large to store; it was answered once and is not replayed. Do not retry with this key.
	TypeResponseNotStored = typeBase + "TypeResponseNotStored"
	// TypeHandlerPanic (500): the handler panicked. The key was released: a retry runs again.
	TypeHandlerPanic = typeBase + "TypeHandlerPanic"
	// TypeScopeMissing (500): the scope option gave no valid scope: WithScope's function
	// returned one that is empty, over 255 bytes or not UTF-8, or WithPrincipalScope's principal
	// is over 245 bytes or not UTF-8. A server configuration error; nothing was claimed.
	TypeScopeMissing = typeBase + "TypeScopeMissing"
	// TypeMisconfigured (500): Handler was called on a nil *Middleware or with a nil handler.
	// Nothing ran.
	TypeMisconfigured = typeBase + "TypeMisconfigured"
	// TypeStoredResponseUnreadable (500): the stored response is in a format this version
	// cannot read.
	TypeStoredResponseUnreadable = typeBase + "TypeStoredResponseUnreadable"
	// TypeUnavailable (503): the key's record could not be read or written; nothing ran.
	// Retrying the request with the same key is safe.
	TypeUnavailable = typeBase + "TypeUnavailable"
)

// Status maps an error of lwt.Store.ExecuteOnce or lwt.Store.Begin to the status code the
// Idempotency-Key draft expects: ErrInvalidKey 400, ErrInProgress 409, ErrKeyReuse 422, and
// ErrOutcomeUnknown 503 (retry later with the same key). ok is false for other errors, which
// are the server's own.
func Status(err error) (code int, ok bool) {
	switch {
	case errors.Is(err, lwt.ErrInvalidKey), errors.Is(err, ErrInvalidKey):
		return http.StatusBadRequest, true
	case errors.Is(err, lwt.ErrInProgress):
		return http.StatusConflict, true
	case errors.Is(err, lwt.ErrKeyReuse):
		return http.StatusUnprocessableEntity, true
	case errors.Is(err, lwt.ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, true
	}
	return 0, false
}

// problem is an RFC 9457 problem details document.
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Original int    `json:"original_status,omitempty"` // TypeResponseNotStored: the status answered once
	Size     int64  `json:"original_size,omitempty"`   // TypeResponseNotStored: the body's size in bytes
	// retryAfter, in seconds, is sent as the Retry-After header when positive.
	retryAfter int
}

func writeProblem(w http.ResponseWriter, p problem) {
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	body, _ := json.Marshal(p) // strings and integers always encode
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
