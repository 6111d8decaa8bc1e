package lwt

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOwnershipIsFencedOnTheServer: an epoch at or below the server's is refused; a graceful
// handover (Disown) lets the next owner in at once; an owner superseded without being told has
// its calls of the scope refused (ErrNoLease) once its renewal fails or its deadline passes,
// and the new owner's Own returns only after the old lease is gone by the server's clock.
func TestOwnershipIsFencedOnTheServer(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	const lease, margin = 3 * time.Second, 1500 * time.Millisecond
	store := func() *Store {
		s, err := NewStore(session, IdempotencyKeys(ks), WithOwnership(lease, margin))
		require.NoError(t, err)
		return s
	}
	nothing := func(context.Context, func(string, time.Time) error) error { return nil }
	fn := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
	a, b, c := store(), store(), store()
	scope := Key{"tenant-owned"}

	require.NoError(t, a.Own(ctx, scope, 5, newNamespacePreCheck(t, "a"), nothing))
	require.ErrorIs(t, b.Own(ctx, scope, 5, newNamespacePreCheck(t, "b"), nothing), ErrSuperseded, "the same epoch, another holder")
	require.ErrorIs(t, b.Own(ctx, scope, 4, newNamespacePreCheck(t, "b"), nothing), ErrSuperseded, "an older epoch")
	_, err := b.ExecuteOnce(ctx, IdempotencyKey("tenant-owned", "k0"), fn)
	require.NoError(t, err, "a store that does not own the scope takes the LWT path")
	res, err := a.ExecuteOnce(ctx, IdempotencyKey("tenant-owned", "k1"), fn)
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, int64(1), a.Stats().FastPath)

	// A graceful handover: Disown releases the lease, so the next Own need not wait for it.
	a.Disown(scope)
	start := time.Now()
	require.NoError(t, b.Own(ctx, scope, 6, newNamespacePreCheck(t, "b"), nothing))
	require.Less(t, time.Since(start), lease, "the released lease was not waited for")

	// b is superseded without being told: c waits for b's lease, b's calls are refused.
	start = time.Now()
	require.NoError(t, c.Own(ctx, scope, 7, newNamespacePreCheck(t, "c"), nothing))
	waited := time.Since(start)
	require.Greater(t, waited, margin, "c waited for b's lease to pass on the server")
	_, err = b.ExecuteOnce(ctx, IdempotencyKey("tenant-owned", "k2"), fn)
	require.ErrorIs(t, err, ErrNoLease, "the superseded owner runs nothing of the scope")
	require.Eventually(t, func() bool { return b.Stats().Superseded == 1 }, 2*lease, 50*time.Millisecond,
		"b's renewal found the scope taken")
	res, err = c.ExecuteOnce(ctx, IdempotencyKey("tenant-owned", "k2"), fn)
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, int64(1), c.Stats().FastPath)
	c.Disown(scope)
	b.Disown(scope)
}

// TestWithOwnershipRefusesBadSettings: each bad setting names the option.
func TestWithOwnershipRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ lease, margin time.Duration }{
		{10 * time.Second, time.Second}, {2 * time.Second, 1500 * time.Millisecond}, {5500 * time.Millisecond, 2 * time.Second},
	} {
		_, err := newConfig([]Option{WithOwnership(tc.lease, tc.margin)})
		require.ErrorIs(t, err, ErrInvalidOption)
		require.ErrorContains(t, err, "WithOwnership")
	}
	_, err := newConfig([]Option{WithOwnersTable("bad name")})
	require.ErrorContains(t, err, "WithOwnersTable")
}

// TestStaleTimedFastPathIsRecorded: a timed call admitted on the fast path whose ownership ended
// while its function ran is recorded with a conditional write and through the Recorder too, whose
// table is what the next owner's warm-up reads: without it, the next owner finds the key clearly
// new and runs it again.
func TestStaleTimedFastPathIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	var mu sync.Mutex
	var recorded []Key
	s, err := NewStore(session, IdempotencyKeys(ks), WithOwnership(3*time.Second, 1500*time.Millisecond),
		WithRecorder(func(_ context.Context, key Key, _, _ []byte, _ uint64, _ time.Time) error {
			mu.Lock()
			defer mu.Unlock()
			recorded = append(recorded, key)
			return nil
		}))
	require.NoError(t, err)
	scope := Key{"tenant-stale"}
	nothing := func(context.Context, func(string, time.Time) error) error { return nil }
	require.NoError(t, s.Own(ctx, scope, 1, newNamespacePreCheck(t, "stale"), nothing))
	defer s.Disown(scope)
	key := IdempotencyKey("tenant-stale", "k1")
	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
		s.ownerOf(cacheKey(scope)).lease.deadline.Store(0) // the lease ends while fn runs
		return []byte("ok"), nil
	}, WithTime(time.Now()))
	require.NoError(t, err)
	require.True(t, res.Created)
	st := s.Stats()
	require.Equal(t, int64(1), st.FastPath)
	require.Equal(t, int64(1), st.StaleEpoch, "recorded with a conditional write")
	require.Zero(t, st.StaleConflicts)
	rec, err := s.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, StatusCompleted, rec.Status)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []Key{key}, recorded, "and through the Recorder")
}
