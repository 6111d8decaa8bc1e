package cas

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
)

// MaxBatchRows is the most rows one conditional batch of this module claims or ends (a
// BatchStore's batch, a late-event claim of package events). A conditional batch is one Paxos
// round whose proposal carries every row it writes, and whose rejection returns every row it
// checked: bounding the rows bounds both.
const MaxBatchRows = 100

// ExecBatch runs b, a conditional batch whose statements all write one partition, as one
// lightweight transaction (one Paxos round) and decodes its result: whether it applied and, when
// it did not, the rows Cassandra returned (the current values of the rows the conditions
// checked, one per row). It is sent once, like Exec: no retry policy, no speculative
// execution. Each statement may carry its own USING TTL, which is how a record and its shorter
// lease cell are written together. Outcome-unknown errors are as for Exec.
func ExecBatch(ctx context.Context, session *gocql.Session, b *gocql.Batch, serial gocql.SerialConsistency) (applied bool, rows []Row, err error) {
	if err := argcheck.Call(ErrInvalidArgument, "*gocql.Batch", b == nil, ctx); err != nil {
		return false, nil, err
	}
	if err := checkSerial(serial); err != nil {
		return false, nil, err
	}
	if session == nil || b == nil || !conditional(b) {
		return false, nil, fmt.Errorf("%w: not a conditional batch", ErrMalformedResult)
	}
	if err := ctx.Err(); err != nil {
		return false, nil, err // never sent: certainly not applied
	}
	b = b.WithContext(ctx).RetryPolicy(nil).SerialConsistency(serial)
	first := map[string]any{}
	applied, iter, err := mapExecuteBatchCAS(session, b, first)
	if err != nil {
		if iter != nil {
			_ = iter.Close()
		}
		return false, nil, casError(ctx, err)
	}
	if len(first) > 0 {
		rows = append(rows, Row(first))
	}
	for {
		row, ok, scanErr := NextRow(iter)
		if scanErr != nil || !ok {
			err = scanErr
			break
		}
		delete(row, "[applied]")
		rows = append(rows, row)
	}
	if cerr := iter.Close(); cerr != nil {
		return false, nil, casError(ctx, cerr)
	}
	if err != nil {
		return false, nil, err
	}
	if applied {
		rows = nil
	}
	return applied, rows, nil
}

// mapExecuteBatchCAS calls gocql's MapExecuteBatchCAS, whose unchecked [applied] assertion in
// v1.7.0 panics on a result without that column; the panic becomes ErrMalformedResult.
func mapExecuteBatchCAS(session *gocql.Session, b *gocql.Batch, first map[string]any) (applied bool, iter *gocql.Iter, err error) {
	defer func() {
		if p := recover(); p != nil {
			applied, iter, err = false, nil, fmt.Errorf("%w: no boolean [applied] column", ErrMalformedResult)
		}
	}()
	applied, iter, err = session.MapExecuteBatchCAS(b, first)
	delete(first, "[applied]")
	return applied, iter, err
}

// conditional reports whether some statement of b has an IF clause.
func conditional(b *gocql.Batch) bool {
	for _, e := range b.Entries {
		if strings.Contains(strings.ToUpper(e.Stmt), " IF ") {
			return true
		}
	}
	return false
}

// casError classifies the error of a conditional write as Exec does.
func casError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &OutcomeUnknownError{Op: "cas", Err: ctxErr}
	}
	if IsOutcomeUnknown(err) {
		return &OutcomeUnknownError{Op: "cas", Err: err}
	}
	return err
}

// BatchConditional is a conditional batch on one partition and the way to settle it when its
// outcome is unknown, as Conditional is for one statement.
type BatchConditional struct {
	Op      string         // names the batch in errors and events, as Conditional.Op
	Session *gocql.Session // runs Batch
	Batch   *gocql.Batch   // the conditional batch, its statements all on one partition
	// Read selects the rows the batch writes. It runs only after an unknown outcome.
	Read *gocql.Query
	// Applied reports whether the rows read back show that the batch applied.
	Applied  func(rows []Row) bool
	Patience time.Duration // as Conditional.Patience
	Observe  func(Event)   // as Conditional.Observe
}

// ResolveBatch runs c.Batch once with ExecBatch at the given consistencies and settles an
// unknown outcome as Resolve does: it reads the rows at serial and decides with c.Applied;
// rows are then the rows read. Errors as for Resolve.
func ResolveBatch(ctx context.Context, c BatchConditional, commit gocql.Consistency, serial gocql.SerialConsistency) (applied bool, rows []Row, err error) {
	if err := argcheck.Call(ErrInvalidArgument, "BatchConditional.Batch", c.Batch == nil, ctx); err != nil {
		return false, nil, err
	}
	c.Batch.Cons = commit
	single := Conditional{Op: c.Op, Read: c.Read, Patience: c.Patience, Observe: c.Observe}
	return single.settle(ctx, serial, func() (bool, []Row, error) {
		return ExecBatch(ctx, c.Session, c.Batch, serial)
	}, c.Applied)
}
