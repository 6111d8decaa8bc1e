package lwt

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseJudgedByServerClock: a caller whose clock runs two leases ahead cannot take over a
// live claim; a caller whose clock runs two leases behind loses its claim once the server's
// clock ends its lease and another worker takes the key over.
func TestLeaseJudgedByServerClock(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	honest, session, ks := newTestStore(t, WithLease(lease))
	ahead := newTestClock()
	ahead.Advance(2 * lease)
	fast, err := NewStore(session, IdempotencyKeys(ks), WithLease(lease), WithClock(ahead.Now))
	require.NoError(t, err)
	behind := newTestClock()
	behind.Advance(-2 * lease)
	slow, err := NewStore(session, IdempotencyKeys(ks), WithLease(lease), WithClock(behind.Now))
	require.NoError(t, err)
	ctx := ctxT(t)

	live := IdempotencyKey("skew", "ahead")
	c, _, err := honest.Begin(ctx, live, nil)
	require.NoError(t, err)
	_, _, err = fast.Begin(ctx, live, nil)
	require.ErrorIs(t, err, ErrInProgress, "a clock two leases ahead sees the live lease")
	_, err = fast.ExecuteOnce(ctx, live, func(context.Context) ([]byte, error) { t.Error("ran on a live claim"); return nil, nil })
	require.ErrorIs(t, err, ErrInProgress)
	require.NoError(t, honest.Complete(ctx, c, []byte("honest")))

	stale := IdempotencyKey("skew", "behind")
	old, _, err := slow.Begin(ctx, stale, nil)
	require.NoError(t, err)
	_, _, err = honest.Begin(ctx, stale, nil)
	require.ErrorIs(t, err, ErrInProgress)
	waitLeaseExpired(t, honest, stale) // the slow caller never renews; its clock still says "mine"
	assert.True(t, behind.Now().Before(old.LeaseUntil), "by its own clock the slow caller still holds the lease")
	res, err := honest.ExecuteOnce(ctx, stale, func(context.Context) ([]byte, error) { return []byte("taker"), nil })
	require.NoError(t, err)
	assert.False(t, res.Replay)
	assert.ErrorIs(t, slow.Complete(ctx, old, []byte("late")), ErrLeaseLost, "the server ended its lease")
	assert.Equal(t, "taker", string(readRecord(t, honest, stale).Result))
}

// TestLegacyRecordLeaseJudgedByCallerClock: a STARTED record written before server-judged
// leases (lease_until with the record's TTL, no lease_owner) keeps its old meaning: live until
// the caller's clock passes lease_until, then taken over.
func TestLegacyRecordLeaseJudgedByCallerClock(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, session, _ := newTestStore(t, WithClock(clock.Now))
	ctx := ctxT(t)
	owner := mustUUID(t)
	now := clock.Now()
	require.NoError(t, session.Query(`INSERT INTO idempotency_keys (namespace, key, fingerprint, status, owner, fence, lease_until, attempts, created_at, updated_at, expires_at)
		VALUES ('legacy', 'k', 0x, 'STARTED', ?, 1, ?, 1, ?, ?, ?) USING TTL 600`, owner, now.Add(time.Minute), now, now, now.Add(10*time.Minute)).Exec())
	key := IdempotencyKey("legacy", "k")
	_, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { t.Error("ran on a live legacy claim"); return nil, nil })
	require.ErrorIs(t, err, ErrInProgress)
	clock.Advance(2 * time.Minute)
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("taken over"), nil })
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.Fence)
	rec := readRecord(t, s, key)
	assert.Equal(t, StatusCompleted, rec.Status)
	assert.Equal(t, "taken over", string(rec.Result))
}
