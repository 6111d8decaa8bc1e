package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"
)

// crashOwner makes s as if its process died while owning scope: the renewal stops and the
// ownership is forgotten here, but the lease cell is left on the server until its TTL.
func crashOwner(s *Store, scope Key) {
	sk := cacheKey(scope)
	s.fast.mu.Lock()
	o := s.fast.owned[sk]
	delete(s.fast.owned, sk)
	s.fast.mu.Unlock()
	o.lease.deadline.Store(0)
	o.lease.stop()
}

// ownerStores makes n stores, each a holder of its own, over one table with a short lease.
func ownerStores(t *testing.T, session *gocql.Session, ks string, n int, opts ...StoreOption) []*Store {
	stores := make([]*Store, n)
	for i := range stores {
		s, err := NewStore(session, IdempotencyKeys(ks), append([]StoreOption{WithOwnership(3*time.Second, 1500*time.Millisecond)}, opts...)...)
		require.NoError(t, err)
		stores[i] = s
	}
	return stores
}

func noKeys(context.Context, func(string, time.Time) error) error { return nil }

// TestSameEpochTakenOverOnceTheHolderDied: a new holder at the row's epoch (a static group
// member restarted within its session timeout gets its partitions back at the same generation)
// takes the scope once the dead holder's lease cell has expired on the server, and runs its
// calls on the fast path; a live holder at that epoch is never taken from. Before, the new
// holder was refused (ErrSuperseded) however long the old one had been dead.
func TestSameEpochTakenOverOnceTheHolderDied(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	// A lease of 6 s: b must stay live, renewing, while c retries on its row.
	const lease = 6 * time.Second
	s := ownerStores(t, session, ks, 3, WithOwnership(lease, 2*time.Second))
	a, b, c := s[0], s[1], s[2]
	scope := Key{"tenant-restarted"}
	fn := func(context.Context) ([]byte, error) { return []byte("ok"), nil }

	require.NoError(t, a.Own(ctx, scope, 5, newNamespacePreCheck(t, "a"), noKeys))
	crashOwner(a, scope)
	start := time.Now()
	require.NoError(t, b.Own(ctx, scope, 5, newNamespacePreCheck(t, "b"), noKeys), "the same epoch, the holder gone")
	took := time.Since(start)
	require.Less(t, took, lease+time.Second+5*time.Second, "within a lease (and its TTL second) of the last renewal, and a loaded machine's LWTs")
	res, err := b.ExecuteOnce(ctx, IdempotencyKey("tenant-restarted", "k1"), fn)
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, int64(1), b.Stats().FastPath)

	// b is live: c at the same epoch waits a lease for b's cell, which b keeps renewing.
	start = time.Now()
	require.ErrorIs(t, c.Own(ctx, scope, 5, newNamespacePreCheck(t, "c"), noKeys), ErrSuperseded, "a live holder")
	require.GreaterOrEqual(t, time.Since(start), lease, "c waited a whole lease before giving up")
	_, err = b.ExecuteOnce(ctx, IdempotencyKey("tenant-restarted", "k2"), fn)
	require.NoError(t, err, "b still owns the scope")
	require.Equal(t, int64(2), b.Stats().FastPath)
	require.Zero(t, b.Stats().Superseded)
	b.Disown(scope)
}

// TestOneEpochManyHoldersOneOwns: stores racing to own one scope at one epoch, on a fresh row
// and again once its holder died, end with exactly one owner; and at no instant of the race do
// two of them hold a live lease.
func TestOneEpochManyHoldersOneOwns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	scope := Key{"tenant-raced"}
	const n = 8
	var winner *Store
	for round := range 2 {
		// A lease of 6 s: the winner's renewals must outlast the losers' retries on its row.
		stores := ownerStores(t, session, ks, n, WithOwnership(6*time.Second, 2*time.Second))
		var wg sync.WaitGroup
		var won, refused atomic.Int32
		errs := make([]error, n)
		stop := make(chan struct{})
		var most atomic.Int32
		wg.Go(func() { // samples the stores' leases while they race
			for {
				live := int32(0)
				for _, s := range stores {
					if o := s.ownerOf(cacheKey(scope)); o != nil && s.live(o.lease) {
						live++
					}
				}
				if live > most.Load() {
					most.Store(live)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
		var racers sync.WaitGroup
		for i, s := range stores {
			racers.Go(func() {
				errs[i] = s.Own(ctx, scope, 7, newNamespacePreCheck(t, "race"), noKeys)
				switch {
				case errs[i] == nil:
					won.Add(1)
				case errors.Is(errs[i], ErrSuperseded):
					refused.Add(1)
				}
			})
		}
		racers.Wait()
		close(stop)
		wg.Wait()
		require.Equal(t, int32(1), won.Load(), "round %d: one owner at one epoch: %v", round, errs)
		require.Equal(t, int32(n-1), refused.Load(), "round %d: the others are refused: %v", round, errs)
		require.Equal(t, int32(1), most.Load(), "round %d: never two live leases", round)
		for i, s := range stores {
			if errs[i] == nil {
				winner = s
			}
		}
		// The winner dies without releasing: the next round takes over from its lease cell.
		crashOwner(winner, scope)
	}
}

// TestEpochThatWentBackIsItsOwnError: an epoch below the row's is ErrSuperseded while the
// row's holder has a live lease (a zombie of an older assignment), and ErrEpochRegressed,
// counted and observed, once none does (the group was reset: nothing at the row's epoch will
// ever hold the scope again). Before, both were ErrSuperseded and nothing counted the second.
func TestEpochThatWentBackIsItsOwnError(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, session, ks := newTestStore(t)
	var mu sync.Mutex
	var seen []ObservationKind
	obs := WithObserver(ObserverFunc(func(o Observation) {
		if o.Kind == ObservedEpochRegressed {
			mu.Lock()
			seen = append(seen, o.Kind)
			mu.Unlock()
		}
	}))
	s := ownerStores(t, session, ks, 2, obs)
	a, b := s[0], s[1]
	scope := Key{"tenant-reset"}

	require.NoError(t, a.Own(ctx, scope, 9, newNamespacePreCheck(t, "a"), noKeys))
	err := b.Own(ctx, scope, 3, newNamespacePreCheck(t, "b"), noKeys)
	require.ErrorIs(t, err, ErrSuperseded, "a live holder at a newer epoch: b is the zombie")
	require.NotErrorIs(t, err, ErrEpochRegressed)

	a.Disown(scope)
	err = b.Own(ctx, scope, 3, newNamespacePreCheck(t, "b"), noKeys)
	require.ErrorIs(t, err, ErrEpochRegressed, "nobody holds epoch 9")
	require.NotErrorIs(t, err, ErrSuperseded)
	require.ErrorContains(t, err, "epoch 9")
	require.Equal(t, int64(1), b.Stats().EpochRegressed)
	mu.Lock()
	require.Equal(t, []ObservationKind{ObservedEpochRegressed}, seen)
	mu.Unlock()
	require.False(t, b.Owns(scope))
}

// TestOwnershipNeedsSerial: a statement on the owners table that found too few replicas for
// SERIAL is ErrSerialUnavailable, keeping the driver's error. (The cluster test's two
// datacentres show the rest: ownership at SERIAL whatever the store's serial consistency.)
func TestOwnershipNeedsSerial(t *testing.T) {
	s := &Store{}
	un := &gocql.RequestErrUnavailable{Consistency: gocql.Quorum, Required: 3, Alive: 2}
	err := s.ownerErr(fmt.Errorf("cas: %w", un))
	require.ErrorIs(t, err, ErrSerialUnavailable)
	var got *gocql.RequestErrUnavailable
	require.ErrorAs(t, err, &got, "the driver's error is kept")
	require.NoError(t, s.ownerErr(nil))
	other := errors.New("syntax")
	require.Equal(t, other, s.ownerErr(other))
}
