package httpidem

import "net/http"

// Outcome is what the middleware did with a request, for logs and counters.
type Outcome string

// The outcomes, one per request the middleware handles.
const (
	// OutcomeNew: the handler ran and its response was stored and sent.
	OutcomeNew Outcome = "new"
	// OutcomeReplayed: the stored response of an earlier request was sent; nothing ran.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeConflict: a request with the key was still running: 409, nothing ran.
	OutcomeConflict Outcome = "conflict"
	// OutcomeMismatch: the key was used with another request: 422, nothing ran.
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeReleased: the handler ran and answered 5xx, or panicked; the key was released so a
	// retry runs again.
	OutcomeReleased Outcome = "released"
	// OutcomeOversized: the handler ran and its response, too large to store, was sent once;
	// retries get 410 (TypeResponseNotStored).
	OutcomeOversized Outcome = "oversized"
	// OutcomeRejected: the key, the caller, the body or the fingerprint was refused (400, 401,
	// 413); nothing was claimed and nothing ran.
	OutcomeRejected Outcome = "rejected"
	// OutcomeUnkeyed: the key is optional and the request had none; it passed to the handler.
	OutcomeUnkeyed Outcome = "unkeyed"
	// OutcomeUnavailable: the record could not be read or claimed (503), or the scope was
	// invalid (500); nothing ran. Under WithRepeatableHandler also a run whose commit did not
	// happen (503): its response is not sent, since nothing of it took effect.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeUnrecorded: the handler ran and its response was sent, but storing it failed (the
	// lease was lost or the write's outcome stayed unknown): a retry after the lease may run
	// the handler again. Event.Err says why. Never under WithRepeatableHandler, whose handler's
	// response is sent only once committed.
	OutcomeUnrecorded Outcome = "unrecorded"
)

// Event reports one request the middleware handled.
type Event struct {
	Request *http.Request
	Outcome Outcome
	Status  int    // the status sent to the client; 0 for OutcomeUnkeyed (the handler answered)
	Scope   string // the key's scope; empty when the request was refused before it was known
	Key     string // the idempotency key; empty when missing or invalid
	Type    string // the problem type when the middleware answered itself, else empty
	Err     error  // the internal error behind the outcome, for logs; never sent to the client
}
