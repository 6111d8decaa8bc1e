package events

import "errors"

// Errors returned by the package. Each is checked with errors.Is; the returned error usually
// wraps one with the offending value. A message held by another consumer matches
// lwt.ErrInProgress, and a write that may or may not have applied lwt.ErrOutcomeUnknown (as a
// *cas.OutcomeUnknownError carrying the driver's error): each sentinel is defined once, in lwt or lwt/cas.
var (
	// ErrInvalidCounter is returned for an empty, over-long or non-UTF-8 counter name.
	ErrInvalidCounter = errors.New("events: invalid counter name")
	// ErrInvalidEventID is returned for an empty, over-long or non-UTF-8 event id.
	ErrInvalidEventID = errors.New("events: invalid event id")
	// ErrMissingEventTime is returned for an event without a time: its bucket would depend on
	// when it was written, and a retry could land in another bucket and be counted twice.
	ErrMissingEventTime = errors.New("events: missing event time")
	// ErrFutureEvent is returned for an event time, or a message time given to ProcessBatch,
	// further ahead of the clock than the allowed clock skew.
	ErrFutureEvent = errors.New("events: event time is in the future")
	// ErrBucketClosed was returned for an event whose window had closed. Log.Record no longer
	// returns it: a late event is counted once in the window open when it is recorded. It is
	// kept so that callers that test for it still compile.
	ErrBucketClosed = errors.New("events: bucket closed")
	// ErrInvalidOption is returned by the constructors for an option value out of range.
	ErrInvalidOption = errors.New("events: invalid option")
	// ErrUnboundedPartition is returned by NewGuard, with ErrInvalidOption, for a window and
	// bucket count that would put more than MaxPartitionRows rows in one partition at the
	// declared rate (WithPartitionRate).
	ErrUnboundedPartition = errors.New("events: layout cannot bound its partitions at the declared rate")
	// ErrInvalidLayout is returned when a consumer group's recorded layouts (guard_layouts) are
	// out of range or lack the first one: the guard cannot tell where its messages are.
	ErrInvalidLayout = errors.New("events: invalid layout recorded")
	// ErrInvalidMessage is returned for a message with an empty or over-long group, topic or
	// id, a negative partition, or text that is not UTF-8.
	ErrInvalidMessage = errors.New("events: invalid message")
	// ErrPayloadTooLarge is returned for a message whose payload exceeds the guard's limit.
	ErrPayloadTooLarge = errors.New("events: payload too large")
	// ErrMessageReuse is returned when a message id was processed with a different payload:
	// two distinct messages share an id, so the second would be silently dropped.
	ErrMessageReuse = errors.New("events: message id reused with a different payload")
	// ErrPoison is matched by a *PoisonError: the message used up its handler attempts. Dead-
	// letter it and acknowledge it.
	ErrPoison = errors.New("events: poison message")
)

// PoisonError reports a message whose handler attempts are used up. It matches ErrPoison and,
// on the delivery whose failure made it poison, the handler's error.
type PoisonError struct {
	// Attempts is the number of handler runs, when this delivery knows it (0 otherwise).
	Attempts int
	// LastError is the stored text of the last handler failure.
	LastError string
	// Err is the handler's error on the delivery that made the message poison; nil after.
	Err error
}

// Error describes the error.
func (e *PoisonError) Error() string { return "events: poison message: " + e.LastError }

// Unwrap returns ErrPoison and the handler's error, if any.
func (e *PoisonError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrPoison}
	}
	return []error{ErrPoison, e.Err}
}
