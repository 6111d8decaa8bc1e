package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Why events were parked (Parked.Reason).
const (
	ReasonPoison  = "poison"  // their publication failed WithMaxAttempts times while others went through
	ReasonExpired = "expired" // their record expired before a relay settled them: commit unknown
	ReasonStalled = "stalled" // still unpublished half the grace after their record's expiry
)

// mark is what a relay writes to one intent: a settled state (published, dropped, parked), or,
// with no state, a failed publication (the attempt count, the next attempt, the error, and the
// events' copy, so the record is no longer needed).
type mark struct {
	v        settled
	state    string
	reason   string // of a parked intent
	attempts int
	next     time.Time
	err      error
}

// ttl is the TTL of a mark of in: its row's own expiry, so every cell of the row expires at
// once; the retention plus an hour for intents written before expires_at was stored.
func (r *Relay) ttl(in intent) int {
	if in.expiresAt.IsZero() {
		return r.cfg.intentTTL()
	}
	return r.cfg.ttlUntil(r.cfg.rowExpiry(in.expiresAt))
}

// mark parks what must be parked, then records the marks in conditional batches fenced on
// the partition's relay fence, and returns how many were marked (a prefix of marks). A parked
// row is written before its intent is marked: a relay that dies between the two leaves the
// intent pending, and its successor parks it again (the same row) or publishes it.
func (r *Relay) mark(ctx context.Context, sh *shard, b int64, marks []mark) (int, error) {
	done := 0
	for i := 0; i < len(marks); i += lwt.MaxBatchRows {
		chunk := marks[i:min(i+lwt.MaxBatchRows, len(marks))]
		for _, m := range chunk {
			if m.state == StateParked {
				if err := r.park(ctx, m); err != nil {
					return done, err
				}
			}
		}
		batch := r.session.NewBatch(gocql.UnloggedBatch)
		batch.Cons = r.cfg.consistency
		now := r.cfg.now()
		for _, m := range chunk {
			in := m.v.in
			if m.state == "" {
				batch.Query(r.st.retry, r.ttl(in), m.attempts, m.next, truncate(m.err.Error(), 1000), m.v.cell,
					b, sh.id, in.namespace, in.key, in.fence, sh.claim.Fence)
				continue
			}
			batch.Query(r.st.mark, r.ttl(in), m.state, now, b, sh.id, in.namespace, in.key, in.fence, sh.claim.Fence)
		}
		applied, rows, err := cas.ExecBatch(ctx, r.session, batch, r.cfg.serial)
		if err != nil {
			return done, fmt.Errorf("outbox: mark: %w", err)
		}
		if !applied {
			return done, fmt.Errorf("%w: marks of bucket %d rejected: %v", ErrFenced, b, rows)
		}
		done += batch.Size()
	}
	return done, nil
}

// park writes m's events to outbox_parked, where they stay until an operator replays or
// discards them.
func (r *Relay) park(ctx context.Context, m mark) error {
	in, msg := m.v.in, ""
	if m.err != nil {
		msg = truncate(m.err.Error(), 1000)
	}
	// Parked by the operation's shard, where an operator's command looks for it by its key,
	// whichever shard its intent was in (WithKeyOrder places it by its events' key).
	err := r.session.Query(r.st.park, r.cfg.intents, shardOf(in.namespace, in.key, r.cfg.shards), in.namespace, in.key, in.fence, in.owner, in.record,
		in.stagedAt, r.cfg.now(), m.reason, max(m.attempts, in.attempts), msg, m.v.cell).
		WithContext(ctx).Consistency(r.cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return fmt.Errorf("outbox: park %q/%q: %w", in.namespace, in.key, err)
	}
	attrs := []any{"namespace", in.namespace, "key", in.key, "shard", in.shard, "reason", m.reason,
		"events", len(m.v.msgs), "attempts", max(m.attempts, in.attempts), "error", msg}
	r.cfg.logger.ErrorContext(ctx, "outbox relay: events parked; replay or discard them (cassdedup outbox parked)", attrs...)
	return nil
}

// parkedError is the pass's error for the parked marks: parking is loud.
func (r *Relay) parkedError(marks []mark) error {
	var errs []error
	for _, m := range marks {
		if m.state != StateParked {
			continue
		}
		err := fmt.Errorf("%w: %q/%q (%s)", ErrParked, m.v.in.namespace, m.v.in.key, m.reason)
		if m.reason == ReasonExpired {
			err = fmt.Errorf("%w: %w", ErrCommitUnknown, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// truncate cuts s to at most n bytes of valid UTF-8 (a text column refuses anything else).
func truncate(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
