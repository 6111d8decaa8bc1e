package counters

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// SettleOption configures Settle and Unsettled. A nil one is refused with ErrInvalidOption.
type SettleOption func(*settleConfig) error

type settleConfig struct{ resettle bool }

// ResettleStuck lets Settle take over a claim that an earlier Settle took and did not mark
// (Claim.Settling): that repair stopped between its steps, as a crashed increment does, and
// may or may not have incremented the counter. Use it only when that repair is known to have
// ended; one still running would see its mark fail, after it may have incremented.
func ResettleStuck() SettleOption {
	return optcheck.Set(ErrInvalidOption, false, "", "", func(c *settleConfig) { c.resettle = true })
}

// Settle resolves an operation that ListUnapplied reported, with evidence the store does not
// have (the caller's own records, or the event log in shadow mode): incremented true says the
// counter was incremented, so the claim is only marked applied; false says it was not, so the
// counter is incremented now and the claim marked. It returns the claim as it was found.
//
// Settle first takes the claim over with a lightweight transaction, CLAIMED to SETTLING under
// a new owner, so of repairs racing on one operation exactly one goes on and the others get
// ErrNotPending, and the original attempt, if it is still running, fails its mark with
// ErrUnconfirmed. A repair that stops before its mark leaves the claim SETTLING, listed by
// ListUnapplied with Settling set; settle it again with ResettleStuck. An increment that fails
// returns ErrUnconfirmed and leaves the claim SETTLING too.
func (s *Store) Settle(ctx context.Context, counter, opID string, incremented bool, opts ...SettleOption) (Claim, error) {
	c, status, err := s.settleable(ctx, counter, opID, opts)
	if err != nil {
		return c, err
	}
	owner := gocql.TimeUUID()
	mine := func(row cas.Row, found bool) bool { o, _ := row["owner"].(gocql.UUID); return found && o == owner }
	applied, _, err := cas.Resolve(ctx, cas.Conditional{
		Op: "settle", Write: s.session.Query(s.q.takeover, s.ttlSeconds(c.ClaimedAt), owner, counter, opID, c.Owner, status),
		Read: s.session.Query(s.q.readOp, counter, opID), Applied: mine,
		Patience: resolvePatience, Observe: observe.ObserveCAS(s.cfg.observer, observe.Key{counter, opID}),
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

// Unsettled returns the claim that Settle, given the same options, would settle now, or the
// error with which it would refuse (ErrNotPending, ErrInvalidCounter, ...), and writes
// nothing: what a repair should show before it acts. The read is serial, as Settle's.
func (s *Store) Unsettled(ctx context.Context, counter, opID string, opts ...SettleOption) (Claim, error) {
	c, _, err := s.settleable(ctx, counter, opID, opts)
	return c, err
}

// settleable validates Settle's arguments and reads the claim, refusing one Settle must not
// take; it returns the claim and its status.
func (s *Store) settleable(ctx context.Context, counter, opID string, opts []SettleOption) (Claim, string, error) {
	if err := s.checkCall(ctx); err != nil {
		return Claim{}, "", err
	}
	var cfg settleConfig
	if err := optcheck.Apply(ErrInvalidOption, &cfg, opts); err != nil {
		return Claim{}, "", err
	}
	if err := ValidateCounter(counter); err != nil {
		return Claim{}, "", err
	}
	if err := ValidateOpID(opID); err != nil {
		return Claim{}, "", err
	}
	c, status, err := s.readSerial(ctx, counter, opID)
	if err != nil {
		return c, status, err
	}
	switch {
	case status == statusSettling && !cfg.resettle:
		return c, status, fmt.Errorf("%w: %q of %q is being settled by another repair (or one that stopped: see ResettleStuck)", ErrNotPending, opID, counter)
	case status != statusClaimed && status != statusSettling:
		return c, status, fmt.Errorf("%w: %q of %q is %s", ErrNotPending, opID, counter, status)
	}
	return c, status, nil
}

// readSerial reads a claim at the serial consistency, which settles any claim or mark in
// flight; status is "" when there is no claim.
func (s *Store) readSerial(ctx context.Context, counter, opID string) (Claim, string, error) {
	c := Claim{Counter: counter, OpID: opID}
	row, found, err := cas.ReadSerial(ctx, s.session.Query(s.q.readOp, counter, opID), s.cfg.serial)
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
	c.Settling = status == statusSettling
	return c, status, nil
}
