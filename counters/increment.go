package counters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/enumname"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// Op is one increment.
type Op struct {
	// Counter names the native counter.
	Counter string
	// ID names the operation; retries of one operation carry the same ID and Delta.
	ID string
	// Delta is added to the counter; it may be negative.
	Delta int64
	// Time is when the operation happened; it is required in shadow mode, where it selects
	// the event log's bucket, and ignored otherwise.
	Time time.Time
}

// Outcome says what an Increment did.
type Outcome int

const (
	// Applied means this call incremented the counter and marked the operation applied.
	Applied Outcome = iota + 1
	// Duplicate means an earlier call applied the operation; nothing was incremented.
	Duplicate
)

// String names the outcome.
func (o Outcome) String() string {
	return enumname.Of(o, "Outcome", "", "applied", "duplicate")
}

// Increment adds op.Delta to op.Counter once per op.ID: it claims the operation with a
// lightweight transaction, increments the counter, and marks the claim applied. A retry of an
// applied operation returns Duplicate. An operation claimed but never marked returns
// ErrUnconfirmed: the increment may or may not have happened, see the package documentation.
func (s *Store) Increment(ctx context.Context, op Op) (Outcome, error) {
	if err := s.checkCall(ctx); err != nil {
		return 0, err
	}
	if err := ValidateCounter(op.Counter); err != nil {
		return 0, err
	}
	if err := ValidateOpID(op.ID); err != nil {
		return 0, err
	}
	if s.cfg.shadow != nil {
		// The event log is idempotent, so it goes first: whatever happens to the native path
		// afterwards, the log counts the operation once.
		err := s.cfg.shadow.Record(ctx, events.Event{Counter: op.Counter, ID: op.ID, Delta: op.Delta, Time: op.Time})
		if err != nil {
			return 0, fmt.Errorf("counters: shadow record: %w", err)
		}
	}
	owner, err := s.claim(ctx, op)
	if err != nil {
		return 0, err
	}
	if owner == (gocql.UUID{}) {
		return Duplicate, nil
	}
	return Applied, s.apply(ctx, op, owner)
}

// claim returns the owner token of a new claim, or the zero UUID when the operation was
// already applied.
func (s *Store) claim(ctx context.Context, op Op) (gocql.UUID, error) {
	owner := gocql.TimeUUID()
	now := s.cfg.now().UTC()
	bucket := now.Truncate(s.cfg.bucket)
	ttl := int(s.cfg.retention / time.Second)
	// The index row goes first, so every claim can be found by a repair.
	err := s.session.Query(s.q.insertIndex, bucket, s.shard(op.Counter, op.ID), op.Counter, op.ID, ttl).
		WithContext(ctx).Consistency(s.cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return gocql.UUID{}, fmt.Errorf("counters: index claim %q: %w", op.ID, err)
	}
	key := observe.Key{op.Counter, op.ID}
	mine := func(row cas.Row, found bool) bool { o, _ := row["owner"].(gocql.UUID); return found && o == owner }
	// A claim whose outcome was unknown and which the read found absent did not apply: send it
	// again. Twice more at most; a node that keeps losing them is reported.
	for range 3 {
		applied, row, err := cas.Resolve(ctx, cas.Conditional{
			Op: "claim", Write: s.session.Query(s.q.claim, op.Counter, op.ID, op.Delta, owner, now, ttl),
			Read: s.session.Query(s.q.readOp, op.Counter, op.ID), Applied: mine,
			Patience: resolvePatience, Observe: observe.ObserveCAS(s.cfg.observer, key),
		}, s.cfg.consistency, s.cfg.serial)
		switch {
		case err != nil:
			return gocql.UUID{}, fmt.Errorf("counters: claim %q: %w", op.ID, err)
		case applied:
			return owner, nil
		case row != nil:
			return gocql.UUID{}, rejected(op, row)
		}
	}
	return gocql.UUID{}, fmt.Errorf("counters: claim %q: not applied after three sends", op.ID)
}

// resolvePatience bounds the serial reads that settle a claim or mark whose outcome is unknown.
const resolvePatience = 2 * time.Second

// rejected explains a claim that found the operation already claimed.
func rejected(op Op, row cas.Row) error {
	delta, _ := row["delta"].(int64)
	status, _ := row["status"].(string)
	switch {
	case delta != op.Delta:
		return fmt.Errorf("%w: %q claimed with delta %d, now %d", ErrOpReuse, op.ID, delta, op.Delta)
	case status == statusApplied:
		return nil
	default:
		return fmt.Errorf("%w: %q of %q is %s", ErrUnconfirmed, op.ID, op.Counter, status)
	}
}

// apply increments the counter and marks the claim applied. A crash or failure between the
// steps leaves the claim unmarked; see the package documentation.
func (s *Store) apply(ctx context.Context, op Op, owner gocql.UUID) error {
	if err := s.step(s.hooks.afterClaim); err != nil {
		return err
	}
	// Counter updates are not idempotent: sent once, never retried by the driver.
	start := time.Now()
	err := s.session.Query(s.q.increment, op.Delta, op.Counter).WithContext(ctx).
		Consistency(s.cfg.consistency).Idempotent(false).RetryPolicy(nil).Exec()
	s.observe(observe.Observation{Kind: observe.ObservedWrite, Key: observe.Key{op.Counter, op.ID}, Op: "increment", Latency: time.Since(start), Err: err})
	if err != nil {
		return s.failedIncrement(ctx, op, owner, err)
	}
	if err := s.step(s.hooks.afterIncrement); err != nil {
		return err
	}
	return s.mark(ctx, op, owner)
}

// mark marks owner's claim of op applied, the counter having been incremented.
func (s *Store) mark(ctx context.Context, op Op, owner gocql.UUID) error {
	now := s.cfg.now().UTC()
	marked := func(row cas.Row, found bool) bool {
		o, _ := row["owner"].(gocql.UUID)
		st, _ := row["status"].(string)
		return found && o == owner && st == statusApplied
	}
	applied, _, err := cas.Resolve(ctx, cas.Conditional{
		Op: "mark", Write: s.session.Query(s.q.mark, s.ttlSeconds(now), now, op.Counter, op.ID, owner),
		Read: s.session.Query(s.q.readOp, op.Counter, op.ID), Applied: marked,
		Patience: resolvePatience, Observe: observe.ObserveCAS(s.cfg.observer, observe.Key{op.Counter, op.ID}),
	}, s.cfg.consistency, s.cfg.serial)
	if err == nil && !applied {
		err = errors.New("claim lost (expired)")
	}
	if err != nil {
		s.observe(observe.Observation{Kind: observe.ObservedUnconfirmed, Key: observe.Key{op.Counter, op.ID}, Op: "mark", Err: err})
		return fmt.Errorf("%w: %q incremented, mark applied: %w", ErrUnconfirmed, op.ID, err)
	}
	return nil
}

// failedIncrement releases the claim when the counter update certainly did not happen, so a
// retry can apply the operation; otherwise the claim stays for repair.
func (s *Store) failedIncrement(ctx context.Context, op Op, owner gocql.UUID, cause error) error {
	var unavailable *gocql.RequestErrUnavailable
	if !errors.As(cause, &unavailable) && !errors.Is(cause, gocql.ErrNoConnections) {
		s.observe(observe.Observation{Kind: observe.ObservedUnconfirmed, Key: observe.Key{op.Counter, op.ID}, Op: "increment", Err: cause})
		return fmt.Errorf("%w: %q increment: %w", ErrUnconfirmed, op.ID, cause)
	}
	released := func(row cas.Row, found bool) bool { o, _ := row["owner"].(gocql.UUID); return !found || o != owner }
	_, _, err := cas.Resolve(ctx, cas.Conditional{
		Op: "release", Write: s.session.Query(s.q.release, op.Counter, op.ID, owner),
		Read: s.session.Query(s.q.readOp, op.Counter, op.ID), Applied: released,
		Patience: resolvePatience, Observe: observe.ObserveCAS(s.cfg.observer, observe.Key{op.Counter, op.ID}),
	}, s.cfg.consistency, s.cfg.serial)
	if err != nil {
		return fmt.Errorf("%w: %q increment: %w (release: %w)", ErrUnconfirmed, op.ID, cause, err)
	}
	return fmt.Errorf("counters: increment %q (not applied, claim released): %w", op.ID, cause)
}

// step runs a test hook standing in for a crash; nil in production.
func (s *Store) step(hook func() error) error {
	if hook == nil {
		return nil
	}
	return hook()
}

// Value returns the counter's native value; 0 for a counter never incremented.
func (s *Store) Value(ctx context.Context, counter string) (int64, error) {
	if err := s.checkCall(ctx); err != nil {
		return 0, err
	}
	if err := ValidateCounter(counter); err != nil {
		return 0, err
	}
	var v int64
	err := s.session.Query(s.q.value, counter).WithContext(ctx).Consistency(s.cfg.consistency).Scan(&v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("counters: read %q: %w", counter, err)
	}
	return v, nil
}

// observe passes o to the store's observer, if any.
func (s *Store) observe(o observe.Observation) {
	if s.cfg.observer != nil {
		s.cfg.observer.Observe(o)
	}
}
