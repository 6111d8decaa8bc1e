package events

import (
	"errors"

	"github.com/cassdedup/cassdedup/internal/countername"
	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Errors returned by the package. Each is checked with errors.Is; the returned error usually
// wraps one with the offending value. A write that may or may not have applied matches
// lwt.ErrOutcomeUnknown (as a *cas.OutcomeUnknownError carrying the driver's error): each
// sentinel is defined once, in lwt or lwt/cas.
var (
	// ErrInvalidCounter is returned for an empty, over-long or non-UTF-8 counter name. It is
	// counters.ErrInvalidCounter: a counter's name is the same in both packages.
	ErrInvalidCounter = countername.ErrInvalid
	// ErrInvalidEventID is returned for an empty, over-long or non-UTF-8 event id.
	ErrInvalidEventID = errors.New("events: invalid event id")
	// ErrMissingEventTime is returned for an event without a time: its bucket would depend on
	// when it was written, and a retry could land in another bucket and be counted twice.
	ErrMissingEventTime = errors.New("events: missing event time")
	// ErrFutureEvent is returned for an event time further ahead of the clock than the allowed
	// clock skew (WithMaxClockSkew).
	ErrFutureEvent = errors.New("events: event time is in the future")
	// ErrBucketClosed was returned for an event whose window had closed. Log.Record no longer
	// returns it: a late event is counted once in the window open when it is recorded. It is
	// kept so that callers that test for it still compile.
	ErrBucketClosed = errors.New("events: bucket closed")
	// ErrClockOffset is returned by Record, RecordBatch, Rollup, PlanRollup and Total while the
	// Log's offset from the cluster's clock is not known within a quarter of the settle time
	// (never measured, the measurements failed, or their round trips were too slow): it could
	// not tell whether a window is open, closed or settled. Nothing was written or read; call
	// again later. An *clock.OffsetError matches it, with the offset, its bound and the limit. It is
	// clock.ErrOffset.
	ErrClockOffset = clock.ErrOffset
	// ErrInvalidOption is returned by NewLog for a bad option; the error names the option.
	ErrInvalidOption = errors.New("events: invalid option")
	// ErrEventExpired is returned by Record for an event whose Time is older than the Log's
	// retention (WithLogRetention): its rows and late claim may have expired, so recording it
	// again could count it twice. It is neither counted nor dropped silently: the caller
	// decides (dead-letter it, or count it by other means).
	ErrEventExpired = errors.New("events: event older than the log's retention")
	// ErrOverflow is returned when a sum of deltas (a window's, a fold's or a total) does not fit
	// in an int64. Nothing is written: a rollup that would overflow leaves its watermark.
	ErrOverflow = errors.New("events: counter total overflows int64")
	// ErrRollupStalled is matched by a *RollupStalledError: a counter's rollup fell further
	// behind the clock than the maximum lag (WithMaxRollupLag), on its way to the retention,
	// past which unfolded events expire uncounted.
	ErrRollupStalled = errors.New("events: rollup stalled")
)
