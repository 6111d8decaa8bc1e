package outbox

import (
	"errors"
	"fmt"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNoRun: Stage was called outside a claimed run of lwt.Store.ExecuteOnce (or on lwt's fast
	// path, which has no conditional write to ride on), or under a store whose table does not
	// declare the outbox column (build it with Table). Nothing was staged.
	ErrNoRun = errors.New("outbox: not in a claimed run whose completion carries the outbox column")

	// ErrInvalidEvent: an event's type, key or headers are empty, too long or not UTF-8, or the
	// run staged more events or bytes than allowed. Nothing of that call was staged, and the run
	// can no longer commit: Stage returns it marked lwt.Permanent, and a run that returns success
	// anyway is recorded FAILED too, so every retry replays the refusal instead of running the
	// function again.
	ErrInvalidEvent = errors.New("outbox: invalid event (nothing of this call was staged; the run fails permanently)")

	// ErrMixedKeys: under WithKeyOrder, an event's key differs from the key of the run's other
	// events (staged in this call or an earlier one). A run's events must share one key, so they
	// take one place in that key's order. Nothing of that call was staged, and the run can no
	// longer commit (Stage returns it marked lwt.Permanent). It matches ErrInvalidEvent.
	ErrMixedKeys = fmt.Errorf("%w: under WithKeyOrder the events of one run must share one key", ErrInvalidEvent)

	// ErrInvalidOption: an option is out of range, or a required argument is nil.
	ErrInvalidOption = errors.New("outbox: invalid option")

	// ErrUnsupportedKey: the run's record is not one a relay of this outbox reads: its key is
	// neither (namespace, key) strings in the outbox's records table (idempotency_keys) nor a
	// message of a consumer guard's table (guard.Guard.Process), or it is in another keyspace.
	// An operation's namespace may not start with NUL: GuardNamespace reserves it.
	ErrUnsupportedKey = errors.New("outbox: the run's record is not one the relay reads")

	// ErrNoCompletion: Stage was called under a claim that no completion of ExecuteOnce ends,
	// such as a handler of guard.Guard.ProcessBatch: its records are completed by a
	// conditional batch that carries no events, so they could not commit with the message.
	// Nothing was staged; use Guard.Process for messages whose handler stages events. It
	// matches ErrNoRun.
	ErrNoCompletion = fmt.Errorf("%w: the claim has no completion to carry events (guard.Guard.ProcessBatch stages none)", ErrNoRun)

	// ErrMalformedIntent: an intent row names a record the relay cannot read.
	ErrMalformedIntent = errors.New("outbox: malformed intent")

	// ErrIntentLate: the intent row took longer than half the horizon to write, so a relay may
	// already have swept its bucket. The run must fail (and be retried) rather than commit.
	ErrIntentLate = errors.New("outbox: intent written too late")

	// ErrClockOffset: the stager's or relay's offset from the cluster's clock is not known
	// within an eighth of the horizon (never measured, the measurements failed, or their round
	// trips were too slow), so it cannot tell which bucket the cluster's time is in. A Stage
	// refused with it wrote nothing, and the run cannot commit (ErrNoIntent); a relay's pass
	// refused with it read and published nothing. An *clock.OffsetError matches it, with the
	// offset, its bound and the limit. It is clock.ErrOffset.
	ErrClockOffset = clock.ErrOffset

	// ErrNoIntent: the run staged events but its intent row was never written; its completion
	// is refused so the events cannot be committed unseen by the relay.
	ErrNoIntent = errors.New("outbox: staged events have no intent row")

	// ErrFenced: a newer relay holds the shard; this relay's marks and cursor were rejected.
	ErrFenced = errors.New("outbox: relay fenced off")

	// ErrShardCountChanged: the relay's shard count differs from the one its cursors were
	// written with; changing it would leave intents in shards no relay reads.
	ErrShardCountChanged = errors.New("outbox: shard count differs from the stored cursors")

	// ErrLayoutMismatch: the shard count, bucket width or horizon configured differs from the
	// layout stored in outbox_layout by the first stager, relay or admin of the intents table.
	// Intents of one layout are found only by readers of the same layout, so a stager, relay or
	// admin of another one is refused rather than staging where no relay looks, or reading only
	// some of the buckets. A shard count that differs matches ErrShardCountChanged too.
	ErrLayoutMismatch = errors.New("outbox: layout differs from the one stored with the intents")

	// ErrRejected marks a publication the broker refused for good (a record over the topic's
	// size limit, an authorization error, an invalid topic, a publisher's own validation): a
	// Publisher wraps it (fmt.Errorf("%w: ...", outbox.ErrRejected)) in the error of that
	// message in PublishErrors, or returns it for a call whose messages are all that
	// operation's. Only such a rejection counts toward parking the events (WithMaxAttempts).
	// Any other error, an ErrRejected that also matches context.DeadlineExceeded or
	// context.Canceled, and an error for a whole call that carried several operations, is
	// transient: the events back off and stay pending (until half the pending grace after
	// their record's expiry, when they are parked as stalled rather than lost). A call of
	// several operations rejected as a whole is retried an operation at a time.
	ErrRejected = errors.New("outbox: publication rejected")

	// ErrPublisherPanic: the Publisher panicked; the relay recovered it into the pass's error.
	// It counts as a rejection of the events of the call, publishing each operation alone when
	// the call carried several.
	ErrPublisherPanic = errors.New("outbox: publisher panicked")

	// ErrCommitUnknown: an intent outlived its record (no relay settled it within the records'
	// retention: a relay outage longer than it), so whether its run committed can no longer be
	// read. Its events, copied to the intent when the run sealed its completion, are parked
	// with reason "expired" rather than dropped: an operator replays or discards them.
	ErrCommitUnknown = errors.New("outbox: the record expired before a relay settled the intent; its events are parked")

	// ErrOutageTooLong: a relay claimed a shard whose cursor is older than an intent lives (the
	// retention, the pending grace and a bucket): every relay of the group was away that long,
	// and intents staged before then may have expired unread. The relay reports it once and goes
	// on; raise WithPendingGrace if outages that long must be survived.
	ErrOutageTooLong = errors.New("outbox: the relays were away longer than intents live")

	// ErrParked: events were parked after their publication failed WithMaxAttempts times (or
	// their record expired first, ErrCommitUnknown). A pass that parks reports it.
	ErrParked = errors.New("outbox: events parked")

	// ErrMalformedEvents: a record's outbox cell cannot be decoded.
	ErrMalformedEvents = errors.New("outbox: malformed outbox cell")

	// ErrNotFound: no committed record with events for the key, or no parked events for it.
	ErrNotFound = errors.New("outbox: no committed events for the key")
)

// PublishErrors is what a Publisher returns when some messages of a call were accepted and
// others not: Errs[i] is the error of msgs[i], nil for an accepted one. The relay then marks
// the operations whose messages were all accepted and counts a failed attempt for the others,
// so one unpublishable event neither blocks nor republishes the rest of its call.
type PublishErrors struct {
	Errs []error
}

// Error reports the first error and how many messages failed.
func (e *PublishErrors) Error() string {
	var first error
	n := 0
	for _, err := range e.Errs {
		if err != nil {
			n++
			if first == nil {
				first = err
			}
		}
	}
	return fmt.Sprintf("outbox: %d of %d messages not accepted, first: %v", n, len(e.Errs), first)
}

// Unwrap returns the messages' errors, so errors.Is finds ErrRejected among them.
func (e *PublishErrors) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
