package cas

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/loop"
)

// Conditional is one conditional write together with the way to settle it when its outcome is
// unknown: a SELECT of the row it writes, read at the serial consistency (which completes any
// Paxos round in flight), and a test of whether that row shows the write applied.
//
// Every conditional write of the module (claims, transitions, fast-path puts, counter claims,
// rollup watermarks) runs through Resolve, so an unknown outcome is settled the same way
// everywhere.
type Conditional struct {
	// Op names the write in errors and observations: "claim", "complete", "rollup", ...
	Op string
	// Write is the conditional statement (INSERT ... IF NOT EXISTS, UPDATE ... IF ...).
	Write *gocql.Query
	// Read selects the row Write targets. It runs only after an unknown outcome.
	Read *gocql.Query
	// Applied reports whether the row read back (found false: there is none) shows that Write
	// applied: a value only this attempt could have written, such as its owner id. A row that
	// does not show it means the write did not apply; so does no row after an INSERT.
	Applied func(row Row, found bool) bool
	// Patience is how long failing serial reads are retried, with backoff, before the outcome
	// is reported unknown; 0 reads once. ctx bounds it too.
	Patience time.Duration
	// Observe, if set, sees the write, each read and the resolution.
	Observe func(Event)
}

// Resolve runs c.Write once (as Exec does) and returns whether it applied and the row
// Cassandra returned when it did not. When the driver cannot tell (a CAS write timeout, no
// response, a lost connection, ctx ending mid-flight), Resolve reads the row at serial and
// decides with c.Applied; row is then the row read (nil when none was found). If the row cannot
// be read within c.Patience, the error is an *OutcomeUnknownError matching ErrOutcomeUnknown,
// with the write's error and the last read's error both reachable through errors.Is and As.
func Resolve(ctx context.Context, c Conditional, commit gocql.Consistency, serial gocql.SerialConsistency) (applied bool, row Row, err error) {
	if err := argcheck.Call(ErrInvalidArgument, "Conditional.Write", c.Write == nil, ctx); err != nil {
		return false, nil, err
	}
	applied, rows, err := c.settle(ctx, serial, func() (bool, []Row, error) {
		applied, row, err := Exec(ctx, c.Write.Consistency(commit), serial)
		if row == nil {
			return applied, nil, err
		}
		return applied, []Row{row}, err
	}, func(rows []Row) bool {
		if len(rows) == 0 {
			return c.Applied(nil, false)
		}
		return c.Applied(rows[0], true)
	})
	if len(rows) == 0 {
		return applied, nil, err
	}
	return applied, rows[0], err
}

// settle runs exec, a conditional write, once; when its outcome is unknown it reads the rows
// back at serial and decides with applied. It is the one place where an unknown outcome is
// settled, for single statements and batches alike.
func (c Conditional) settle(ctx context.Context, serial gocql.SerialConsistency, exec func() (bool, []Row, error), applied func([]Row) bool) (bool, []Row, error) {
	start := time.Now()
	ok, rows, err := exec()
	var unknown *OutcomeUnknownError
	if errors.As(err, &unknown) {
		unknown.Op = c.Op
	}
	c.observe(Event{Kind: Ran, Op: c.Op, Applied: ok, Latency: time.Since(start), Err: err})
	if unknown == nil {
		return ok, rows, err
	}
	c.observe(Event{Kind: Unknown, Op: c.Op, Err: err})
	if unknownNotApplied {
		return false, nil, nil // the planted bug of mutant_unknown_not_applied.go
	}
	rows, rerr := c.readBackRows(ctx, serial)
	if rerr != nil {
		return false, nil, &OutcomeUnknownError{Op: c.Op, Err: errors.Join(unknown.Err, rerr)}
	}
	c.observe(Event{Kind: Resolved, Op: c.Op})
	return applied(rows), rows, nil
}

// readBackRows reads c's rows at serial, retrying failed reads with backoff for c.Patience.
func (c Conditional) readBackRows(ctx context.Context, serial gocql.SerialConsistency) ([]Row, error) {
	deadline := time.Now().Add(c.Patience)
	delay := 20 * time.Millisecond
	for {
		start := time.Now()
		rows, err := ReadSerialAll(ctx, c.Read, serial)
		c.observe(Event{Kind: Ran, Op: "read", Applied: len(rows) > 0, Latency: time.Since(start), Err: err})
		if err == nil {
			return rows, nil
		}
		if ctx.Err() != nil || time.Now().Add(delay).After(deadline) {
			return nil, err
		}
		if werr := loop.Sleep(ctx, delay); werr != nil {
			return nil, errors.Join(err, werr)
		}
		delay = min(delay*2, time.Second)
	}
}

func (c Conditional) observe(e Event) {
	if c.Observe != nil {
		c.Observe(e)
	}
}
