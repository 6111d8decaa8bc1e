package outbox

import "errors"

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

	// ErrUnsupportedKey: the run's record key is not (namespace, key) strings, as in
	// idempotency_keys.
	ErrUnsupportedKey = errors.New("outbox: the record key is not (namespace, key)")

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
