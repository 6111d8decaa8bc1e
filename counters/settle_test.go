package counters

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSettleRepairsBothCrashes repairs the two crashes of the crash window with the evidence
// each needs: one was never incremented (Settle increments it), one was (Settle only marks).
func TestSettleRepairsBothCrashes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	crash := errors.New("crash")
	s.hooks.afterClaim = func() error { return crash }
	_, err := s.Increment(ctx, Op{Counter: "c", ID: "missing", Delta: 10})
	require.ErrorIs(t, err, crash)
	s.hooks = hooks{afterIncrement: func() error { return crash }}
	_, err = s.Increment(ctx, Op{Counter: "c", ID: "counted", Delta: 100})
	require.ErrorIs(t, err, crash)
	s.hooks = hooks{}

	c, err := s.Settle(ctx, "c", "missing", false)
	require.NoError(t, err)
	assert.EqualValues(t, 10, c.Delta)
	c, err = s.Settle(ctx, "c", "counted", true)
	require.NoError(t, err)
	assert.EqualValues(t, 100, c.Delta)

	v, err := s.Value(ctx, "c")
	require.NoError(t, err)
	assert.EqualValues(t, 110, v, "each operation counted once")
	pending, err := s.ListUnapplied(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	assert.Empty(t, pending)
	out, err := s.Increment(ctx, Op{Counter: "c", ID: "missing", Delta: 10})
	require.NoError(t, err)
	assert.Equal(t, Duplicate, out, "a retry after the repair is a duplicate")

	_, err = s.Settle(ctx, "c", "missing", false)
	assert.ErrorIs(t, err, ErrNotPending, "settled already")
	_, err = s.Settle(ctx, "c", "never", false)
	assert.ErrorIs(t, err, ErrNotPending)
	_, err = s.Settle(ctx, "", "x", false)
	assert.ErrorIs(t, err, ErrInvalidCounter)
	_, err = s.Settle(ctx, "c", "x", false, nil)
	assert.ErrorIs(t, err, ErrInvalidOption)
}

// Many repairs of one operation racing: the claim takeover lets exactly one increment.
func TestSettleRacingRepairsIncrementOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	s.hooks.afterClaim = func() error { return errors.New("crash") }
	_, err := s.Increment(ctx, Op{Counter: "race", ID: "op", Delta: 7})
	require.Error(t, err)
	s.hooks = hooks{}

	var settled, notPending atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Settle(ctx, "race", "op", false)
			switch {
			case err == nil:
				settled.Add(1)
			case errors.Is(err, ErrNotPending):
				notPending.Add(1)
			default:
				t.Errorf("settle: %v", err)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, settled.Load())
	assert.EqualValues(t, 11, notPending.Load())
	v, err := s.Value(ctx, "race")
	require.NoError(t, err)
	assert.EqualValues(t, 7, v)
}

// A repair that stops between its takeover and its mark leaves the claim SETTLING: listed,
// refused to a plain Settle, settled with ResettleStuck.
func TestResettleAStoppedRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	crash := errors.New("crash")
	s.hooks.afterClaim = func() error { return crash }
	_, err := s.Increment(ctx, Op{Counter: "c", ID: "op", Delta: 3})
	require.ErrorIs(t, err, crash)
	_, err = s.Settle(ctx, "c", "op", false) // the repair stops after its takeover
	require.ErrorIs(t, err, crash)
	s.hooks = hooks{}

	pending, err := s.ListUnapplied(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.True(t, pending[0].Settling)
	_, err = s.Settle(ctx, "c", "op", false)
	require.ErrorIs(t, err, ErrNotPending, "another repair may be running")
	c, err := s.Settle(ctx, "c", "op", false, ResettleStuck())
	require.NoError(t, err)
	assert.True(t, c.Settling)
	v, err := s.Value(ctx, "c")
	require.NoError(t, err)
	assert.EqualValues(t, 3, v)
}
