package observe

import "errors"

// Sentinel errors shared by lwt and the stores beside it, re-exported as lwt.ErrInProgress and
// lwt.ErrInvalidArgument (the same values, so one errors.Is test covers every package). Their
// messages keep lwt's prefix: users meet them as lwt's.
var (
	// ErrInProgress: another attempt holds a live claim on the key. Nothing ran. An HTTP layer
	// answers 409 Conflict; a caller may also ask the executor to wait for the stored result.
	ErrInProgress = errors.New("lwt: operation in progress under another claim")

	// ErrInvalidArgument: a required argument is missing (a nil function, codec, claim, session,
	// context, CallOption or AdminOption). Nothing was read or written.
	ErrInvalidArgument = errors.New("lwt: invalid argument")
)
