package lwt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPutCompletedIsReplayedWithOneExpiry(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, session, _ := newTestStore(t)
	key := IdempotencyKey("ns", "fast-1")
	rec, err := s.PutCompleted(ctx, key, []byte("fp"), []byte("result"), 7)
	require.NoError(t, err)
	assert.Equal(t, int64(7), rec.Epoch)
	assertTTLsEqual(t, session, key, 86400)

	got := readRecord(t, s, key)
	assert.Equal(t, StatusCompleted, got.Status)
	assert.Equal(t, int64(7), got.Epoch)
	assert.Equal(t, int64(0), got.Fence, "no claim was made")

	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { t.Fatal("ran"); return nil, nil },
		func(c *callConfig) error { c.fingerprint = []byte("fp"); return nil })
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.Equal(t, "result", string(res.Value))

	applied, existing, err := s.PutCompletedIfNotExists(ctx, key, []byte("fp"), []byte("other"), 8)
	require.NoError(t, err)
	assert.False(t, applied, "a record exists")
	assert.Equal(t, "result", string(existing.Result))
	applied, _, err = s.PutCompletedIfNotExists(ctx, IdempotencyKey("ns", "fast-2"), nil, nil, 8)
	require.NoError(t, err)
	assert.True(t, applied)

	_, err = s.PutCompleted(ctx, IdempotencyKey("ns", ""), nil, nil, 1)
	require.ErrorIs(t, err, ErrInvalidKey)
	_, err = s.PutCompleted(ctx, key, nil, make([]byte, DefaultMaxResultSize+1), 1)
	require.ErrorIs(t, err, ErrResultTooLarge)
}
