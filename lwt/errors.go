package lwt

import (
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// Sentinel errors. Test for them with errors.Is; the typed errors below wrap them and carry data.
var (
	// ErrKeyReuse: the key was already used with a different request fingerprint. Nothing ran.
	// An HTTP layer answers 422 Unprocessable Content.
	ErrKeyReuse = errors.New("lwt: idempotency key reused with a different request")

	// ErrInProgress: another attempt holds a live claim on the key. Nothing ran. An HTTP layer
	// answers 409 Conflict; a caller may also ask the executor to wait for the stored result.
	// It is observe.ErrInProgress, which events reports too.
	ErrInProgress = observe.ErrInProgress

	// ErrLeaseLost: the claim was taken over (its lease expired) or the record expired, so this
	// owner's write was rejected by its fencing condition. The result was not stored.
	ErrLeaseLost = errors.New("lwt: lease lost")

	// ErrOutcomeUnknown: a write may or may not have applied. The driver could not report its
	// outcome (a CAS write timeout, no response, a lost connection, ctx ending mid-flight) and
	// serial reads within the store's patience could not tell. Every error of this module that
	// means "may or may not have applied" matches it, and a *cas.OutcomeUnknownError carries the
	// driver's error. What a retry does depends on which write it was: a claim whose outcome is
	// unknown blocks its key until the claim's lease passes, after which a retry takes the key
	// over and runs the function; a completion whose outcome is unknown means the function HAS
	// run and its result may be lost, so a retry after the lease may run it a second time. Give
	// such functions an idempotent downstream write (keyed by the idempotency key or fenced by
	// ClaimFromContext(ctx).Fence) if a second run would harm.
	// It is cas.ErrOutcomeUnknown, so one errors.Is test covers this package and package cas.
	ErrOutcomeUnknown = cas.ErrOutcomeUnknown

	// ErrInvalidOption: an option passed to NewStore, or a field of ScanOptions or StuckOptions,
	// is out of range; the error names it. Nothing was written.
	ErrInvalidOption = errors.New("lwt: invalid option")

	// ErrSuperseded: the scope that Own was asked to take is held on the server at a greater
	// epoch whose holder's lease is live (another process was assigned it later), or at the
	// same epoch by another holder whose lease stayed live for a whole lease while Own waited,
	// or was taken from this store while Own waited for the previous owner's lease. Nothing is
	// fast-pathed for the scope.
	ErrSuperseded = errors.New("lwt: scope owned at a newer epoch")

	// ErrEpochRegressed: Own was asked for an epoch below the one the server holds for the
	// scope, and no holder's lease is live: the epochs went back (the consumer group was deleted
	// or expired and made again, moved to another cluster, or switched to member epochs), so
	// every Own of the scope would be refused until the row's TTL (7 days after its last
	// renewal) passed. Nothing is fast-pathed for the scope. Once no process of the old epochs
	// runs, forget the scopes' owners (cassdedup owners forget; docs/operating.md). An expelled
	// member whose successor also died can see it for a moment: it matters when it persists.
	ErrEpochRegressed = errors.New("lwt: the scope's epoch went back")

	// ErrSerialUnavailable: a statement on the owners table, which is always decided at SERIAL
	// (a quorum of the replicas of every datacentre), found too few replicas alive, though the
	// store's other statements may use LOCAL_SERIAL. Own is refused: ownership decided in one
	// datacentre could be taken in another at once. Retry when the datacentres are reachable.
	ErrSerialUnavailable = errors.New("lwt: ownership needs SERIAL, which the cluster cannot reach")

	// ErrNoLease: the call's scope is owned by this store (Own) but its server lease is not live
	// (Own is still waiting for the previous owner's lease, a renewal is overdue, or another
	// process took the scope). Nothing ran: leave the message for redelivery.
	ErrNoLease = errors.New("lwt: the scope's ownership lease is not live")

	// ErrInvalidArgument: a required argument is missing (a nil function, codec, claim, session,
	// CallOption or AdminOption). Nothing was read or written. It is observe.ErrInvalidArgument,
	// which events and counters return too.
	ErrInvalidArgument = observe.ErrInvalidArgument

	// ErrInvalidKey: a key or namespace is missing, too long, not UTF-8 or of an unsupported
	// type. Nothing was read or written. An HTTP layer answers 400 Bad Request.
	ErrInvalidKey = errors.New("lwt: invalid key")

	// ErrResultTooLarge: a result exceeds the configured size limit, so it was not stored (a
	// large blob in a Paxos round would fail or stall the mutation instead).
	ErrResultTooLarge = errors.New("lwt: result too large")

	// ErrNotFound: Store.Get found no live record for the key.
	ErrNotFound = errors.New("lwt: record not found")

	// ErrStoredFailure matches a permanent failure of the operation, recorded on its first run
	// and replayed to later callers (see Permanent and FailureError).
	ErrStoredFailure = errors.New("lwt: operation failed permanently")
)

// InProgressError is ErrInProgress with the holder's lease, so a caller can tell a client when
// to retry (an HTTP Retry-After).
type InProgressError struct {
	LeaseUntil time.Time // when the current claim may be taken over if it is not renewed
	Attempts   int       // claims made on the key so far
}

// Error describes the error.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("lwt: operation in progress under another claim (lease until %s)", e.LeaseUntil.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns ErrInProgress.
func (e *InProgressError) Unwrap() error { return ErrInProgress }

// FailureError is a permanent failure of the operation. On the first run it wraps the error
// the function returned; on a replay only the stored message is known. It matches
// ErrStoredFailure.
type FailureError struct {
	Message string // the stored message: the error's text
	Replay  bool   // true when read back from the store rather than returned by this call's run
	Err     error  // the function's error on the first run; nil on a replay
}

// Error describes the error.
func (e *FailureError) Error() string { return "lwt: operation failed permanently: " + e.Message }

// Unwrap returns ErrStoredFailure and, on the first run, the function's own error.
func (e *FailureError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrStoredFailure}
	}
	return []error{ErrStoredFailure, e.Err}
}

// permanentError marks an error the caller wants stored and replayed.
type permanentError struct{ err error }

// Error describes the error.
func (e *permanentError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as a permanent failure: the executor stores its message and replays it
// to every later call with the same key, as an API replays a cached 4xx response. Any other
// error from the function releases the claim so a retry runs the function again. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
