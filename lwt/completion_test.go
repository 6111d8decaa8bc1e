package lwt

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

type cell []byte

func (c cell) CellValue() (any, error) { return []byte(c), nil }

type failingCell struct{}

func (failingCell) CellValue() (any, error) { return nil, errors.New("cannot encode") }

type refusedCell struct{}

func (refusedCell) CellValue() (any, error) { return nil, Permanent(errors.New("refused for good")) }

// newCompletionStore is a store over idempotency_keys with its outbox column declared.
func newCompletionStore(t *testing.T) (*Store, func(Key) []byte) {
	t.Helper()
	session, ks := testnode.NewSession(t)
	table := IdempotencyKeys(ks)
	table.CompletionColumns = []string{"outbox"}
	s, err := NewStore(session, table)
	require.NoError(t, err)
	read := func(k Key) []byte {
		var b []byte
		require.NoError(t, session.Query(`SELECT outbox FROM "`+ks+`".idempotency_keys WHERE namespace = ? AND key = ?`, k...).Scan(&b))
		return b
	}
	return s, read
}

// TestCompletionCellsRideOnTheCompletion: a cell set by the run is stored with its result, and
// only then; a released run stores none, and a new claim clears what an earlier one stored.
func TestCompletionCellsRideOnTheCompletion(t *testing.T) {
	t.Parallel()
	s, read := newCompletionStore(t)
	ctx := ctxT(t)
	stage := func(ctx context.Context, v string) error {
		c, ok := CompletionFromContext(ctx)
		if !ok {
			return errors.New("no completion")
		}
		_, err := c.LoadOrStore("outbox", cell(v))
		return err
	}

	done := IdempotencyKey("cells", "done")
	_, err := s.ExecuteOnce(ctx, done, func(ctx context.Context) ([]byte, error) { return []byte("r"), stage(ctx, "events") })
	require.NoError(t, err)
	assert.Equal(t, "events", string(read(done)))

	released := IdempotencyKey("cells", "released")
	boom := errors.New("boom")
	_, err = s.ExecuteOnce(ctx, released, func(ctx context.Context) ([]byte, error) {
		require.NoError(t, stage(ctx, "never"))
		return nil, boom
	})
	require.ErrorIs(t, err, boom)
	assert.Empty(t, read(released), "a released run stores no cell")

	failed := IdempotencyKey("cells", "failed")
	_, err = s.ExecuteOnce(ctx, failed, func(ctx context.Context) ([]byte, error) {
		require.NoError(t, stage(ctx, "never"))
		return nil, Permanent(boom)
	})
	require.ErrorIs(t, err, ErrStoredFailure)
	assert.Empty(t, read(failed), "a failed run stores no cell")

	// An operator's release of the completed key: the next claim nulls the old cell.
	_, err = s.ReleaseKey(ctx, done)
	require.NoError(t, err)
	_, err = s.ExecuteOnce(ctx, done, func(ctx context.Context) ([]byte, error) { return []byte("again"), nil })
	require.NoError(t, err)
	assert.Empty(t, read(done), "a new claim clears the cells of the last completion")
}

// TestCompletionCellErrorReleases: a cell that cannot give its value stops the completion, and
// the claim is released so a retry runs again.
func TestCompletionCellErrorReleases(t *testing.T) {
	t.Parallel()
	s, read := newCompletionStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("cells", "bad")
	_, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		c, _ := CompletionFromContext(ctx)
		_, err := c.LoadOrStore("outbox", failingCell{})
		return []byte("r"), err
	})
	require.ErrorContains(t, err, "cannot encode")
	assert.Equal(t, StatusReleased, readRecord(t, s, key).Status)
	assert.Empty(t, read(key))
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	require.NoError(t, err)
	assert.False(t, res.Replay)
}

// TestCompletionCellPermanentErrorFails: a cell whose value is refused for good (an error
// marked Permanent) records the run FAILED, replayed to the retry without running it again.
func TestCompletionCellPermanentErrorFails(t *testing.T) {
	t.Parallel()
	s, read := newCompletionStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("cells", "refused")
	runs := 0
	for range 2 {
		_, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
			runs++
			c, _ := CompletionFromContext(ctx)
			_, err := c.LoadOrStore("outbox", refusedCell{})
			return []byte("r"), err
		})
		var failure *FailureError
		require.ErrorAs(t, err, &failure)
		assert.Contains(t, failure.Message, "refused for good")
	}
	assert.Equal(t, 1, runs, "the retry replays the failure")
	assert.Equal(t, StatusFailed, readRecord(t, s, key).Status)
	assert.Empty(t, read(key))
}

// TestCompletionColumnsValidated: undeclared columns are refused at run time, bad names and
// names of record columns at construction, and a sealed completion takes no more cells.
func TestCompletionColumnsValidated(t *testing.T) {
	t.Parallel()
	s, _ := newCompletionStore(t)
	ctx := ctxT(t)
	var late *Completion
	_, err := s.ExecuteOnce(ctx, IdempotencyKey("cells", "undeclared"), func(ctx context.Context) ([]byte, error) {
		c, ok := CompletionFromContext(ctx)
		require.True(t, ok)
		late = c
		_, err := c.LoadOrStore("result", cell("x"))
		assert.ErrorIs(t, err, ErrInvalidArgument)
		_, err = c.LoadOrStore("outbox", nil)
		assert.ErrorIs(t, err, ErrInvalidArgument)
		return nil, nil
	})
	require.NoError(t, err)
	_, err = late.LoadOrStore("outbox", cell("late"))
	assert.ErrorIs(t, err, ErrInvalidArgument, "after the run returned")

	_, ok := CompletionFromContext(context.Background())
	assert.False(t, ok)
	for _, cols := range [][]string{{"status"}, {"namespace"}, {"bad name"}, {"outbox", "outbox"}} {
		tb := IdempotencyKeys("ks")
		tb.CompletionColumns = cols
		_, err := NewStore(s.session, tb)
		assert.Error(t, err, "%v", cols)
	}
}
