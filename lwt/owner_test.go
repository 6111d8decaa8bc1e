package lwt

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
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
		// A short write timeout keeps Own's wait after acquiring well apart from the lease.
		s, err := NewStore(session, IdempotencyKeys(ks), WithOwnership(lease, margin), WithWriteRequestTimeout(500*time.Millisecond))
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
		_, err := storeConfig(WithOwnership(tc.lease, tc.margin))
		require.ErrorIs(t, err, ErrInvalidOption)
		require.ErrorContains(t, err, "WithOwnership")
	}
	_, err := storeConfig(WithOwnersTable("bad name"))
	require.ErrorContains(t, err, "WithOwnersTable")
	for _, d := range []time.Duration{0, -time.Second, time.Minute + time.Millisecond} {
		_, err = storeConfig(WithWriteRequestTimeout(d))
		require.ErrorIs(t, err, ErrInvalidOption)
		require.ErrorContains(t, err, "WithWriteRequestTimeout")
	}
	cfg, err := storeConfig(WithWriteRequestTimeout(time.Minute))
	require.NoError(t, err)
	require.Equal(t, time.Minute, cfg.ownerSettle)
	require.Equal(t, 2*time.Second, defaultConfig().ownerSettle, "Cassandra's default write_request_timeout")
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
		WithRecorder(func(_ context.Context, key Key, _ time.Time) (RecordWrite, error) {
			return func(context.Context, []byte, []byte, uint64) error {
				mu.Lock()
				defer mu.Unlock()
				recorded = append(recorded, key)
				return nil
			}, nil
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

// TestOwnWaitsOutTheWriteRequestTimeout: Own's warm-up reads nothing of the scope before the
// cluster's write_request_timeout has passed since its lease was acquired, by when a record
// write of the previous owner still on its way to a replica has been applied or dropped.
// Before, the warm-up began as soon as the lease was acquired.
func TestOwnWaitsOutTheWriteRequestTimeout(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, ks := testnode.NewSession(t)
	var mu sync.Mutex
	var acquired time.Time // when the lease's acquiring write was answered
	c := testnode.Cluster(t)
	c.Keyspace = ks
	c.QueryObserver = queryObserver(func(q gocql.ObservedQuery) {
		if strings.Contains(q.Statement, "lease_holder = null") {
			mu.Lock()
			defer mu.Unlock()
			acquired = q.End
		}
	})
	session := testnode.Connect(t, c)
	t.Cleanup(session.Close)
	const settle = 1500 * time.Millisecond
	s, err := NewStore(session, IdempotencyKeys(ks), WithOwnership(3*time.Second, 1500*time.Millisecond),
		WithWriteRequestTimeout(settle))
	require.NoError(t, err)
	scope := Key{"tenant-settle"}
	var read time.Time
	src := func(context.Context, func(string, time.Time) error) error {
		read = time.Now()
		return nil
	}
	require.NoError(t, s.Own(ctx, scope, 1, newNamespacePreCheck(t, "settle"), src))
	defer s.Disown(scope)
	mu.Lock()
	defer mu.Unlock()
	require.False(t, acquired.IsZero(), "the lease's acquiring write was observed")
	require.GreaterOrEqual(t, read.Sub(acquired), settle, "the warm-up waited out the write timeout after acquiring")
}

// queryObserver adapts a function to gocql.QueryObserver.
type queryObserver func(gocql.ObservedQuery)

func (f queryObserver) ObserveQuery(_ context.Context, q gocql.ObservedQuery) { f(q) }
