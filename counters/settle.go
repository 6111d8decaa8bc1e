package counters

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
)

// Settle resolves an operation that ListUnapplied reported, with evidence the store does not
// have (the caller's own records, or the event log in shadow mode): incremented true says the
// counter was incremented, so the claim is only marked applied; false says it was not, so the
// counter is incremented now and the claim marked. It returns the claim as it was found.
//
// Settle first takes the claim over with a lightweight transaction (a new owner, on condition
// that the claim is still CLAIMED under the owner read), so two repairs of one operation, or a
// repair racing the original attempt's mark, cannot both go on: the loser gets ErrNotPending.
// The original attempt, if it is still running, then fails its mark with ErrUnconfirmed. An
// increment that fails leaves the claim CLAIMED (ErrUnconfirmed): list and settle it again.
func (s *Store) Settle(ctx context.Context, counter, opID string, incremented bool) (Claim, error) {
	if err := ValidateCounter(counter); err != nil {
		return Claim{}, err
	}
	if err := ValidateOpID(opID); err != nil {
		return Claim{}, err
	}
	c, status, err := s.readSerial(ctx, counter, opID)
	if err != nil {
		return c, err
	}
	if status != statusClaimed {
		return c, fmt.Errorf("%w: %q of %q is %s", ErrNotPending, opID, counter, status)
	}
	owner := gocql.TimeUUID()
	mine := func(row lwt.Row, found bool) bool { o, _ := row["owner"].(gocql.UUID); return found && o == owner }
	applied, _, err := lwt.Resolve(ctx, lwt.Conditional{
		Op: "settle", Write: s.session.Query(s.q.takeover, s.ttlSeconds(c.ClaimedAt), owner, counter, opID, c.Owner),
		Read: s.session.Query(s.q.readOp, counter, opID), Applied: mine,
		Patience: resolvePatience, Observer: s.cfg.observer, Key: lwt.Key{counter, opID},
	}, s.cfg.consistency, s.cfg.serial)
	if err != nil {
		return c, fmt.Errorf("counters: settle %q: %w", opID, err)
	}
	if !applied {
		return c, fmt.Errorf("%w: %q of %q changed while settling", ErrNotPending, opID, counter)
	}
	op := Op{Counter: counter, ID: opID, Delta: c.Delta}
	if incremented {
		return c, s.mark(ctx, op, owner)
	}
	return c, s.apply(ctx, op, owner)
}

// readSerial reads a claim at the serial consistency, which settles any claim or mark in
// flight; status is "" when there is no claim.
func (s *Store) readSerial(ctx context.Context, counter, opID string) (Claim, string, error) {
	c := Claim{Counter: counter, OpID: opID}
	row, found, err := lwt.ReadSerial(ctx, s.session.Query(s.q.readOp, counter, opID), s.cfg.serial)
	if err != nil {
		return c, "", fmt.Errorf("counters: read claim %q of %q: %w", opID, counter, err)
	}
	if !found {
		return c, "", fmt.Errorf("%w: %q of %q has no claim (never made, released or expired)", ErrNotPending, opID, counter)
	}
	c.Delta, _ = row["delta"].(int64)
	c.Owner, _ = row["owner"].(gocql.UUID)
	c.ClaimedAt, _ = row["claimed_at"].(time.Time)
	status, _ := row["status"].(string)
	return c, status, nil
}
