package outbox

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNoRun: Stage was called outside a claimed run of lwt.Store.ExecuteOnce (or on lwt's fast
	// path, which has no conditional write to ride on), or under a store whose table does not
	// declare the outbox column (build it with Table). Nothing was staged.
	ErrNoRun = errors.New("outbox: not in a claimed run whose completion carries the outbox column")

	// ErrInvalidEvent: an event's type, key or headers are empty, too long or not UTF-8, or the
	// run staged more events or bytes than allowed. Nothing of that call was staged.
	ErrInvalidEvent = errors.New("outbox: invalid event")

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

	// ErrNoIntent: the run staged events but its intent row was never written; its completion
	// is refused so the events cannot be committed unseen by the relay.
	ErrNoIntent = errors.New("outbox: staged events have no intent row")

	// ErrFenced: a newer relay holds the shard; this relay's marks and cursor were rejected.
	ErrFenced = errors.New("outbox: relay fenced off")

	// ErrShardCountChanged: the relay's shard count differs from the one its cursors were
	// written with; changing it would leave intents in shards no relay reads.
	ErrShardCountChanged = errors.New("outbox: shard count differs from the stored cursors")

	// ErrMalformedEvents: a record's outbox cell cannot be decoded.
	ErrMalformedEvents = errors.New("outbox: malformed outbox cell")

	// ErrNotFound: no committed record with events for the key.
	ErrNotFound = errors.New("outbox: no committed events for the key")
)
