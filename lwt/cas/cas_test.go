package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

func TestCASPrimitives(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	ctx := context.Background()
	owner := gocql.TimeUUID()
	insert := func(o gocql.UUID) *gocql.Query {
		return session.Query(`INSERT INTO idempotency_keys (namespace, key, status, owner, fence) VALUES (?, ?, 'STARTED', ?, 1) IF NOT EXISTS`, "ns", "k1", o)
	}

	applied, existing, err := InsertIfNotExists(ctx, insert(owner), gocql.Serial)
	require.NoError(t, err)
	assert.True(t, applied)
	assert.Empty(t, existing)

	applied, existing, err = InsertIfNotExists(ctx, insert(gocql.TimeUUID()), gocql.LocalSerial)
	require.NoError(t, err)
	assert.False(t, applied)
	assert.Equal(t, owner, existing["owner"], "a rejected insert returns the existing row")
	assert.Equal(t, "STARTED", existing["status"])
	assert.Equal(t, int64(1), existing["fence"])

	// IF col = ? not applied: only the condition's columns come back.
	applied, current, err := UpdateIf(ctx, session.Query(`UPDATE idempotency_keys SET status = 'COMPLETED' WHERE namespace = ? AND key = ? IF owner = ? AND fence = ?`, "ns", "k1", gocql.TimeUUID(), int64(1)), gocql.Serial)
	require.NoError(t, err)
	assert.False(t, applied)
	assert.Equal(t, owner, current["owner"])
	assert.NotContains(t, current, "status")

	applied, _, err = UpdateIf(ctx, session.Query(`UPDATE idempotency_keys SET status = 'COMPLETED' WHERE namespace = ? AND key = ? IF owner = ? AND fence = ?`, "ns", "k1", owner, int64(1)), gocql.Serial)
	require.NoError(t, err)
	assert.True(t, applied)

	// A missing row returns [applied] alone.
	applied, current, err = UpdateIf(ctx, session.Query(`UPDATE idempotency_keys SET status = 'COMPLETED' WHERE namespace = ? AND key = ? IF owner = ?`, "ns", "absent", owner), gocql.Serial)
	require.NoError(t, err)
	assert.False(t, applied)
	assert.Empty(t, current)

	row, found, err := ReadSerial(ctx, session.Query(`SELECT status, owner FROM idempotency_keys WHERE namespace = ? AND key = ?`, "ns", "k1"), gocql.Serial)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "COMPLETED", row["status"])
	_, found, err = ReadSerial(ctx, session.Query(`SELECT status FROM idempotency_keys WHERE namespace = ? AND key = ?`, "ns", "absent"), gocql.LocalSerial)
	require.NoError(t, err)
	assert.False(t, found)
}

func TestCASRejectsNonConditional(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	ctx := context.Background()
	_, _, err := Exec(ctx, session.Query(`INSERT INTO idempotency_keys (namespace, key, status) VALUES ('ns', 'plain', 'STARTED')`), gocql.Serial)
	assert.ErrorIs(t, err, ErrMalformedResult, "a plain write has no [applied] column")
	_, _, err = InsertIfNotExists(ctx, session.Query(`UPDATE idempotency_keys SET status = 'X' WHERE namespace = 'a' AND key = 'b' IF EXISTS`), gocql.Serial)
	assert.ErrorIs(t, err, ErrMalformedResult)
	_, _, err = InsertIfNotExists(ctx, session.Query(`INSERT INTO idempotency_keys (namespace, key) VALUES ('a', 'b') IF NOT EXISTS`), gocql.SerialConsistency(gocql.Quorum))
	assert.Error(t, err)
}

func TestCASCanceledContext(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := InsertIfNotExists(ctx, session.Query(`INSERT INTO idempotency_keys (namespace, key) VALUES ('a', 'b') IF NOT EXISTS`), gocql.Serial)
	assert.Same(t, context.Canceled, err, "ctx.Err() is returned unchanged")
}

func TestIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	unknown := []error{
		&gocql.RequestErrWriteTimeout{WriteType: "CAS"},
		&gocql.RequestErrReadTimeout{},
		gocql.ErrTimeoutNoResponse,
		gocql.ErrConnectionClosed,
		io.EOF,
		fmt.Errorf("wrapped: %w", gocql.ErrTimeoutNoResponse),
		&OutcomeUnknownError{Op: "claim", Err: gocql.ErrTimeoutNoResponse},
	}
	for _, err := range unknown {
		assert.True(t, IsOutcomeUnknown(err), "%v", err)
	}
	known := []error{nil, &gocql.RequestErrUnavailable{}, gocql.ErrNoConnections, errors.New("syntax"), context.Canceled}
	for _, err := range known {
		assert.False(t, IsOutcomeUnknown(err), "%v", err)
	}
	e := &OutcomeUnknownError{Op: "claim", Err: &gocql.RequestErrWriteTimeout{WriteType: "CAS"}}
	var wt *gocql.RequestErrWriteTimeout
	assert.ErrorAs(t, e, &wt, "the driver's error stays reachable")
	assert.ErrorIs(t, e, ErrOutcomeUnknown)
}

// TestExecBatch: a conditional batch on one partition applies once, each statement with its
// own TTL; a rejected one returns the current row; a batch without a condition is refused.
func TestExecBatch(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	ctx := context.Background()
	batch := func(owner string) *gocql.Batch {
		b := session.NewBatch(gocql.UnloggedBatch)
		b.Query(`INSERT INTO idempotency_keys (namespace, key, status) VALUES ('b', 'k', ?) IF NOT EXISTS USING TTL 600`, owner)
		b.Query(`UPDATE idempotency_keys USING TTL 30 SET lease_until = toTimestamp(now()) WHERE namespace = 'b' AND key = 'k'`)
		return b
	}
	applied, rows, err := ExecBatch(ctx, session, batch("first"), gocql.Serial)
	require.NoError(t, err)
	assert.True(t, applied)
	assert.Empty(t, rows)
	var statusTTL, leaseTTL int
	require.NoError(t, session.Query(`SELECT TTL(status), TTL(lease_until) FROM idempotency_keys WHERE namespace = 'b' AND key = 'k'`).Scan(&statusTTL, &leaseTTL))
	assert.Greater(t, statusTTL, 500)
	assert.LessOrEqual(t, leaseTTL, 30, "each statement keeps its own TTL")

	applied, rows, err = ExecBatch(ctx, session, batch("second"), gocql.Serial)
	require.NoError(t, err)
	assert.False(t, applied)
	require.Len(t, rows, 1)
	assert.Equal(t, "first", rows[0]["status"])

	plain := session.NewBatch(gocql.UnloggedBatch)
	plain.Query(`UPDATE idempotency_keys SET status = 'x' WHERE namespace = 'b' AND key = 'k'`)
	_, _, err = ExecBatch(ctx, session, plain, gocql.Serial)
	assert.ErrorIs(t, err, ErrMalformedResult)
}

// TestNilQueryAndContextAreInvalidArguments: the primitives refuse a nil context, statement or
// batch, and a serial consistency that is not one, with ErrInvalidArgument instead of panicking.
func TestNilQueryAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	q := (&gocql.Session{}).Query("INSERT INTO ks.t (k) VALUES (1) IF NOT EXISTS")
	applied := func(Row, bool) bool { return false }
	calls := map[string]func(ctx context.Context, q *gocql.Query) error{
		"InsertIfNotExists": func(ctx context.Context, q *gocql.Query) error {
			_, _, err := InsertIfNotExists(ctx, q, gocql.Serial)
			return err
		},
		"UpdateIf": func(ctx context.Context, q *gocql.Query) error {
			_, _, err := UpdateIf(ctx, q, gocql.Serial)
			return err
		},
		"Exec": func(ctx context.Context, q *gocql.Query) error {
			_, _, err := Exec(ctx, q, gocql.Serial)
			return err
		},
		"ReadSerial": func(ctx context.Context, q *gocql.Query) error {
			_, _, err := ReadSerial(ctx, q, gocql.Serial)
			return err
		},
		"ReadSerialAll": func(ctx context.Context, q *gocql.Query) error {
			_, err := ReadSerialAll(ctx, q, gocql.Serial)
			return err
		},
		"Resolve": func(ctx context.Context, q *gocql.Query) error {
			_, _, err := Resolve(ctx, Conditional{Op: "t", Write: q, Read: q, Applied: applied, Patience: time.Second}, gocql.Quorum, gocql.Serial)
			return err
		},
	}
	for name, call := range calls {
		assert.ErrorIs(t, call(context.Background(), nil), ErrInvalidArgument, "nil query: %s", name)
		assert.ErrorIs(t, call(nil, q), ErrInvalidArgument, "nil context: %s", name) //nolint:staticcheck // on purpose
	}
	_, _, err := Exec(context.Background(), q, gocql.SerialConsistency(gocql.Quorum))
	assert.ErrorIs(t, err, ErrInvalidArgument, "QUORUM is no serial consistency")
	_, err = ReadSerialAll(context.Background(), q, gocql.SerialConsistency(gocql.One))
	assert.ErrorIs(t, err, ErrInvalidArgument)
	b := (&gocql.Session{}).NewBatch(gocql.LoggedBatch) //nolint:staticcheck // the form the package takes
	_, _, err = ExecBatch(context.Background(), &gocql.Session{}, nil, gocql.Serial)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = ExecBatch(nil, &gocql.Session{}, b, gocql.Serial) //nolint:staticcheck // on purpose
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = ExecBatch(context.Background(), &gocql.Session{}, b, gocql.SerialConsistency(gocql.Quorum))
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = ResolveBatch(context.Background(), BatchConditional{Op: "t"}, gocql.Quorum, gocql.Serial)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = ResolveBatch(nil, BatchConditional{Op: "t", Batch: b}, gocql.Quorum, gocql.Serial) //nolint:staticcheck // on purpose
	assert.ErrorIs(t, err, ErrInvalidArgument)
}
