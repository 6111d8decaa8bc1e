package guard

import (
	"errors"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Errors returned by the package. Each is checked with errors.Is; the returned error usually
// wraps one with the offending value. A message held by another consumer matches
// lwt.ErrInProgress, and a write that may or may not have applied lwt.ErrOutcomeUnknown (as an
// *lwt.OutcomeUnknownError carrying the driver's error): each sentinel is defined once, in lwt.
var (
	// ErrFutureMessage is returned, with ErrInvalidMessage, for a message time given to
	// ProcessBatch further ahead of the clock than the allowed clock skew.
	ErrFutureMessage = errors.New("guard: message time is in the future")
	// ErrClockOffset is returned by Process (outcome Failed), ProcessBatch, ProcessPoll, Own,
	// ProcessedIDs and the operator's calls (Inspect, ReleaseMessage, DeleteMessage, ScanStuck,
	// ListMessages) while the guard's offset from the cluster's clock is not known within a
	// quarter of lwt.MaxClockSkew (never measured, the measurements failed, or their round trips
	// were too slow): it could not place a message's index row, vouch for a message's time, warm
	// a pre-check or judge a claim's lease without risking a copy run twice. Nothing was run or
	// written; deliver the messages again, or call again, later. An *clock.OffsetError matches
	// it, with the offset, its bound and the limit. It is clock.ErrOffset.
	ErrClockOffset = clock.ErrOffset
	// ErrInvalidOption is returned by New for a bad option; the error names the option.
	ErrInvalidOption = errors.New("guard: invalid option")
	// ErrUnboundedPartition is returned by New, with ErrInvalidOption, for a window and
	// bucket count that would put more than MaxPartitionRows rows in one partition at the
	// declared rate (WithPartitionRate).
	ErrUnboundedPartition = errors.New("guard: layout cannot bound its partitions at the declared rate")
	// ErrInvalidLayout is returned when a consumer group's recorded layouts (guard_layouts) are
	// out of range or lack the first one: the guard cannot tell where its messages are.
	ErrInvalidLayout = errors.New("guard: invalid layout recorded")
	// ErrInvalidMessage is returned for a message with an empty or over-long group, topic or
	// id, a negative partition, or text that is not UTF-8.
	ErrInvalidMessage = errors.New("guard: invalid message")
	// ErrPayloadTooLarge is returned for a message whose payload exceeds the guard's limit.
	ErrPayloadTooLarge = errors.New("guard: payload too large")
	// ErrMessageReuse is returned when a message id was processed with a different payload:
	// two distinct messages share an id, so the second would be silently dropped.
	ErrMessageReuse = errors.New("guard: message id reused with a different payload")
	// ErrPoison is matched by a *PoisonError: the message used up its handler attempts. Dead-
	// letter it and acknowledge it.
	ErrPoison = errors.New("guard: poison message")
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
func (e *PoisonError) Error() string { return "guard: poison message: " + e.LastError }

// Unwrap returns ErrPoison and the handler's error, if any.
func (e *PoisonError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrPoison}
	}
	return []error{ErrPoison, e.Err}
}
