package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
)

// Row is one row of a CAS result or a read, column name to value. Values are the driver's Go
// types (string, int64, time.Time, gocql.UUID, []byte, ...); a null column holds its type's
// zero value. A CAS result that carries [applied] alone (an applied write, or a condition on a
// missing row) gives a nil Row, which reads as empty.
type Row map[string]any

// InsertIfNotExists runs q, an INSERT ... IF NOT EXISTS, as a lightweight transaction with the
// given serial consistency. It reports whether the row was inserted and, when it was not, the
// existing row as Cassandra returned it (all its columns).
//
// The query is sent once: it is marked non-idempotent, with no retry policy and no speculative
// execution, because a re-sent conditional write can report "not applied" for its own first
// attempt. A timeout whose outcome is unknown returns an *OutcomeUnknownError wrapping the
// driver's error; so does ctx ending while the request is in flight (it wraps ctx.Err(), which
// still matches with errors.Is). A ctx that ended before the call returns ctx.Err() unchanged:
// nothing was sent. Resolve runs a conditional write and settles such an outcome.
func InsertIfNotExists(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) (applied bool, existing Row, err error) {
	return execWith(ctx, q, serial, "IF NOT EXISTS")
}

// UpdateIf runs q, a conditional UPDATE or DELETE (... IF col = ? ..., or IF EXISTS), as a
// lightweight transaction. When it did not apply, current holds the columns Cassandra returned:
// the condition's columns for IF col = ?, all columns for IF EXISTS, and none when the row
// does not exist. The execution rules of InsertIfNotExists apply.
func UpdateIf(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) (applied bool, current Row, err error) {
	return execWith(ctx, q, serial, " IF ")
}

// execWith runs q with Exec if its statement has the condition clause; one without it is
// refused before anything is sent.
func execWith(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency, clause string) (bool, Row, error) {
	if err := argcheck.Call(ErrInvalidArgument, "*gocql.Query", q == nil, ctx); err != nil {
		return false, nil, err
	}
	if !strings.Contains(strings.ToUpper(q.Statement()), clause) {
		return false, nil, fmt.Errorf("%w: statement has no %q", ErrMalformedResult, strings.TrimSpace(clause))
	}
	return Exec(ctx, q, serial)
}

// Exec runs any conditional statement as InsertIfNotExists does and decodes its result.
func Exec(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) (applied bool, row Row, err error) {
	if err := argcheck.Call(ErrInvalidArgument, "*gocql.Query", q == nil, ctx); err != nil {
		return false, nil, err
	}
	if err := checkSerial(serial); err != nil {
		return false, nil, err
	}
	if err := ctx.Err(); err != nil {
		return false, nil, err // never sent: certainly not applied
	}
	q = prepare(ctx, q, serial)
	iter := q.Iter()
	applied, row, scanErr := scanResult(iter)
	closeErr := iter.Close()
	if closeErr != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The request may have been sent before ctx ended: its outcome is unknown.
			return false, nil, &OutcomeUnknownError{Op: "cas", Err: ctxErr}
		}
		if IsOutcomeUnknown(closeErr) {
			return false, nil, &OutcomeUnknownError{Op: "cas", Err: closeErr}
		}
		return false, nil, closeErr
	}
	if scanErr != nil {
		return false, nil, scanErr
	}
	return applied, row, nil
}

// checkSerial refuses a serial consistency that is not one: a conditional write or serial read
// at QUORUM would be a plain one.
func checkSerial(serial gocql.SerialConsistency) error {
	if serial != gocql.Serial && serial != gocql.LocalSerial {
		return fmt.Errorf("%w: serial consistency must be SERIAL or LOCAL_SERIAL, not %v", ErrInvalidArgument, serial)
	}
	return nil
}

// prepare sets what every conditional statement needs. Idempotent(false) also turns off
// speculative execution, which gocql only uses for idempotent queries; the explicit
// NonSpeculativeExecution keeps that true if the session default changes. NoSkipMetadata makes
// the node send the result's columns, which vary between applied and not applied.
// WithContext returns a copy in gocql v1.7.0, so the copy is the query to run.
func prepare(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) *gocql.Query {
	return q.WithContext(ctx).
		Idempotent(false).
		RetryPolicy(nil).
		SetSpeculativeExecutionPolicy(gocql.NonSpeculativeExecution{}).
		SerialConsistency(serial).
		NoSkipMetadata()
}

// scanResult reads the single row of a CAS result into a Row, without trusting its shape. The
// commonest answers, an applied write and a condition on a missing row, carry [applied] alone:
// those are scanned into a bool, with no Row (nil) and none of the allocations of one.
func scanResult(iter *gocql.Iter) (bool, Row, error) {
	cols := iter.Columns()
	if len(cols) == 0 {
		return false, nil, fmt.Errorf("%w: no columns", ErrMalformedResult)
	}
	if len(cols) == 1 && cols[0].Name == "[applied]" && cols[0].TypeInfo.Type() == gocql.TypeBoolean {
		var applied bool
		if !iter.Scan(&applied) {
			return false, nil, fmt.Errorf("%w: no row", ErrMalformedResult)
		}
		return applied, nil, nil
	}
	row, ok, err := NextRow(iter)
	if err != nil {
		return false, nil, err
	}
	if !ok {
		return false, nil, fmt.Errorf("%w: no row", ErrMalformedResult)
	}
	applied, isBool := row["[applied]"].(bool)
	if _, present := row["[applied]"]; !present || !isBool {
		return false, nil, fmt.Errorf("%w: no boolean [applied] column", ErrMalformedResult)
	}
	delete(row, "[applied]")
	return applied, row, nil
}

// NextRow scans the next row of iter into a Row using the columns the node sent; ok is false
// when there is none left. It is how every row of this package is read, and how a caller reads
// the rows of its own SELECT in the same form.
func NextRow(iter *gocql.Iter) (row Row, ok bool, err error) {
	rd, err := iter.RowData()
	if err != nil {
		return nil, false, err
	}
	if !iter.Scan(rd.Values...) {
		return nil, false, nil
	}
	row = make(Row, len(rd.Columns))
	for i, name := range rd.Columns {
		row[name] = deref(rd.Values[i])
	}
	return row, true, nil
}

// deref turns the pointer RowData allocated into the value it points at.
func deref(p any) any {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return p
	}
	return v.Elem().Interface()
}

// IsOutcomeUnknown reports whether err, returned by a conditional write, leaves its outcome
// unknown: a CAS write timeout (on protocol v4 CAS_WRITE_UNKNOWN arrives as one too), a read
// timeout in a Paxos phase, no response within the client timeout, or a connection that failed
// after the request may have been sent. An *OutcomeUnknownError is unknown too. Errors that
// prove the write did not happen (unavailable, invalid query, no connection) are not.
func IsOutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var wt *gocql.RequestErrWriteTimeout
	var rt *gocql.RequestErrReadTimeout
	var wf *gocql.RequestErrWriteFailure
	if errors.As(err, &wt) || errors.As(err, &rt) || errors.As(err, &wf) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// ReadSerial reads at most one row with q, a SELECT, at SERIAL or LOCAL_SERIAL consistency. A
// serial read completes any Paxos round in flight on the partition first, so it sees the
// outcome of a conditional write whose response was lost; that is how an unknown outcome is
// resolved. found is false when no row matched.
func ReadSerial(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) (row Row, found bool, err error) {
	if err := argcheck.Call(ErrInvalidArgument, "*gocql.Query", q == nil, ctx); err != nil {
		return nil, false, err
	}
	rows, err := ReadSerialAll(ctx, q, serial)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0], true, nil
}

// ReadSerialAll reads every row q selects at serial consistency, as ReadSerial reads one: the
// rows of a partition that a conditional batch wrote.
func ReadSerialAll(ctx context.Context, q *gocql.Query, serial gocql.SerialConsistency) ([]Row, error) {
	if err := argcheck.Call(ErrInvalidArgument, "*gocql.Query", q == nil, ctx); err != nil {
		return nil, err
	}
	if err := checkSerial(serial); err != nil {
		return nil, err
	}
	// gocql has no SERIAL read constant; the protocol's read consistency SERIAL is the same code.
	q = q.WithContext(ctx).Consistency(gocql.Consistency(serial)).Idempotent(true).NoSkipMetadata()
	iter := q.Iter()
	var rows []Row
	var scanErr error
	for {
		row, ok, err := NextRow(iter)
		if err != nil || !ok {
			scanErr = err
			break
		}
		rows = append(rows, row)
	}
	if err := iter.Close(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	return rows, scanErr
}
