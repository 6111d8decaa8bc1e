package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plant makes a record of key in status st: a claim left STARTED, or one ended as st.
func plant(t *testing.T, s *Store, key Key, st Status) *Claim {
	t.Helper()
	ctx := ctxT(t)
	c, rec, err := s.Begin(ctx, key, nil)
	require.NoError(t, err)
	require.Nil(t, rec)
	switch st {
	case StatusCompleted:
		require.NoError(t, s.Complete(ctx, c, []byte(`{"ok":true}`)))
	case StatusFailed:
		require.NoError(t, s.Fail(ctx, c, []byte("card declined")))
	case StatusReleased:
		require.NoError(t, s.Release(ctx, c, []byte("timeout")))
	}
	return c
}

// expiredClaim leaves a claim of each key STARTED, made by a store whose lease is one second,
// and waits until the server has expired every lease; it returns the last claim.
func expiredClaim(t *testing.T, session *gocql.Session, ks string, keys ...Key) *Claim {
	t.Helper()
	short, err := NewStore(session, IdempotencyKeys(ks), WithLease(time.Second))
	require.NoError(t, err)
	var c *Claim
	for _, k := range keys {
		c = plant(t, short, k, StatusStarted)
	}
	for _, k := range keys {
		waitLeaseExpired(t, short, k)
	}
	return c
}

func TestInspectShowsEachState(t *testing.T) {
	t.Parallel()
	s, session, ks := newTestStore(t, WithRetention(time.Hour))
	ctx := ctxT(t)
	expired := expiredClaim(t, session, ks, IdempotencyKey("ns", "expired"))
	for _, st := range []Status{StatusStarted, StatusCompleted, StatusFailed, StatusReleased} {
		plant(t, s, IdempotencyKey("ns", string(st)), st)
	}

	for _, tc := range []struct {
		key    string
		status Status
		live   bool
		result string
	}{
		{"STARTED", StatusStarted, true, ""},
		{"COMPLETED", StatusCompleted, false, `{"ok":true}`},
		{"FAILED", StatusFailed, false, "card declined"},
		{"RELEASED", StatusReleased, false, "timeout"},
		{"expired", StatusStarted, false, ""},
	} {
		in, err := s.Inspect(ctx, IdempotencyKey("ns", tc.key))
		require.NoError(t, err, tc.key)
		assert.Equal(t, tc.status, in.Status, tc.key)
		assert.Equal(t, tc.live, in.LiveLease, tc.key)
		assert.Equal(t, tc.result, string(in.Result), tc.key)
		assert.EqualValues(t, 1, in.Fence, tc.key)
		assert.Equal(t, 1, in.Attempts, tc.key)
		// The node's TTL and the record's expiry tell the same story.
		assert.InDelta(t, time.Until(in.ExpiresAt).Seconds(), in.TTL.Seconds(), 5, tc.key)
		assert.Greater(t, in.TTL, 50*time.Minute, tc.key)
	}
	in, err := s.Inspect(ctx, IdempotencyKey("ns", "expired"))
	require.NoError(t, err)
	assert.Equal(t, expired.Owner, in.Owner)
	assert.True(t, in.LeaseUntil.IsZero(), "the server dropped the lease cells")
	_, err = s.Inspect(ctx, IdempotencyKey("ns", "none"))
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Inspect(ctx, IdempotencyKey("", "x"))
	assert.ErrorIs(t, err, ErrInvalidKey)
}

func TestReleaseKeyRefusesALiveLeaseUnlessForced(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t, WithCache(10))
	ctx := ctxT(t)
	key := IdempotencyKey("ns", "live")
	holder := plant(t, s, key, StatusStarted)

	res, err := s.ReleaseKey(ctx, key)
	var inProgress *InProgressError
	require.ErrorAs(t, err, &inProgress)
	assert.WithinDuration(t, holder.LeaseUntil, inProgress.LeaseUntil, time.Millisecond)
	assert.False(t, res.Changed)
	assert.Equal(t, StatusStarted, readRecord(t, s, key).Status, "nothing was written")

	res, err = s.ReleaseKey(ctx, key, Force(), WithNote("stuck worker, ticket 42"))
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, StatusStarted, res.Before.Status)
	assert.True(t, res.Before.LiveLease)
	rec := readRecord(t, s, key)
	assert.Equal(t, StatusReleased, rec.Status)
	assert.Equal(t, "stuck worker, ticket 42", string(rec.Result))
	assert.Equal(t, holder.Fence, rec.Fence, "a release keeps the fence; the next claim moves it")

	assert.ErrorIs(t, s.Complete(ctx, holder, []byte("late")), ErrLeaseLost, "the old holder is fenced off")
	res2, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("again"), nil })
	require.NoError(t, err)
	assert.False(t, res2.Replay)
	assert.EqualValues(t, 2, res2.Fence)

	again, err := s.ReleaseKey(ctx, key)
	require.NoError(t, err, "a COMPLETED record is released without force")
	assert.True(t, again.Changed)
	res3, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("third"), nil })
	require.NoError(t, err)
	assert.False(t, res3.Replay, "the cache forgot the released result")
	assert.Equal(t, "third", string(res3.Value))

	plant(t, s, IdempotencyKey("ns", "released"), StatusReleased)
	noop, err := s.ReleaseKey(ctx, IdempotencyKey("ns", "released"))
	require.NoError(t, err)
	assert.False(t, noop.Changed, "already released")
	_, err = s.ReleaseKey(ctx, IdempotencyKey("ns", "none"))
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.ReleaseKey(ctx, IdempotencyKey("ns", "released"), nil)
	assert.ErrorIs(t, err, ErrInvalidArgument, "a nil option")
	_, err = s.Delete(ctx, IdempotencyKey("ns", "released"), nil)
	assert.ErrorIs(t, err, ErrInvalidArgument)
}

func TestDeleteRefusesALiveLeaseUnlessForced(t *testing.T) {
	t.Parallel()
	s, session, ks := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("ns", "purge")
	holder := plant(t, s, key, StatusStarted)

	_, err := s.Delete(ctx, key)
	require.ErrorIs(t, err, ErrInProgress)
	res, err := s.Delete(ctx, key, Force())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	_, err = s.Get(ctx, key)
	require.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, s.Complete(ctx, holder, nil), ErrLeaseLost)

	// Without force once the lease expired, and of a COMPLETED record.
	expiredClaim(t, session, ks, IdempotencyKey("ns", "dead"))
	_, err = s.Delete(ctx, IdempotencyKey("ns", "dead"))
	require.NoError(t, err)
	plant(t, s, IdempotencyKey("ns", "done"), StatusCompleted)
	_, err = s.Delete(ctx, IdempotencyKey("ns", "done"))
	require.NoError(t, err)
	res2, err := s.ExecuteOnce(ctx, IdempotencyKey("ns", "done"), func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	assert.True(t, res2.Created, "after a purge the key is new")
	assert.EqualValues(t, 1, res2.Fence)
}

// Many operators racing on one key: each write is fenced on the record it read, so exactly one
// release (or delete) applies and the others see its result.
func TestAdminWritesRaceSafely(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	const n = 16
	run := func(f func() (AdminResult, error)) (changed int, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else if res.Changed {
					changed++
				}
			}()
		}
		wg.Wait()
		return changed, errs
	}
	key := IdempotencyKey("ns", "race")
	plant(t, s, key, StatusStarted)
	changed, errs := run(func() (AdminResult, error) { return s.ReleaseKey(ctx, key, Force()) })
	assert.Empty(t, errs)
	assert.Equal(t, 1, changed, "one release applies; the others find it RELEASED")

	changed, errs = run(func() (AdminResult, error) { return s.Delete(ctx, key) })
	assert.Equal(t, 1, changed, "one delete applies")
	for _, err := range errs {
		assert.True(t, errors.Is(err, ErrNotFound), "the others find no record: %v", err)
	}
}

func TestScanStuckFindsExactlyThePlantedClaims(t *testing.T) {
	t.Parallel()
	s, session, ks := newTestStore(t)
	ctx := ctxT(t)
	want := map[string]StuckReason{}
	var dead []Key
	for i := range 5 {
		k := fmt.Sprintf("dead-%d", i)
		dead = append(dead, IdempotencyKey("ns", k))
		want[k] = StuckLeaseExpired
	}
	expiredClaim(t, session, ks, dead...)
	for i := range 3 {
		k := fmt.Sprintf("flaky-%d", i)
		for range DefaultStuckAttempts {
			plant(t, s, IdempotencyKey("ns", k), StatusReleased)
		}
		want[k] = StuckReleasedRepeatedly
	}
	plant(t, s, IdempotencyKey("ns", "released-once"), StatusReleased)
	plant(t, s, IdempotencyKey("ns", "running"), StatusStarted)
	plant(t, s, IdempotencyKey("ns", "failed"), StatusFailed)
	const healthy = 400
	var wg sync.WaitGroup
	errs := make(chan error, healthy)
	for i := range healthy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PutCompleted(ctx, IdempotencyKey(fmt.Sprintf("tenant-%d", i%7), fmt.Sprintf("ok-%d", i)), nil, []byte("r"), 1)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	got := map[string]StuckReason{}
	stats, err := s.ScanStuck(ctx, StuckOptions{ScanOptions: ScanOptions{Splits: 16, Parallelism: 4, PageSize: 10, RowsPerSecond: -1}},
		func(c StuckClaim) error {
			got[c.Key[1].(string)] = c.Reason
			assert.Equal(t, "ns", c.Key[0])
			return nil
		})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.EqualValues(t, healthy+len(want)+3, stats.Rows, "every record read once")
	assert.EqualValues(t, len(want), stats.Matched)
	assert.Equal(t, 16, stats.Ranges)
	assert.GreaterOrEqual(t, stats.Pages, stats.Rows/10, "pages of at most 10 rows")

	// An error from yield stops the scan and is returned.
	stop := errors.New("enough")
	_, err = s.ScanStuck(ctx, StuckOptions{}, func(StuckClaim) error { return stop })
	assert.ErrorIs(t, err, stop)
}

func TestScanKeepsToItsRate(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	for i := range 200 {
		_, err := s.PutCompleted(ctx, IdempotencyKey("ns", fmt.Sprint(i)), nil, nil, 1)
		require.NoError(t, err)
	}
	start := time.Now()
	stats, err := s.Scan(ctx, ScanOptions{Splits: 4, Parallelism: 4, PageSize: 50, RowsPerSecond: 400}, func(Key, *Record) error { return nil })
	require.NoError(t, err)
	assert.EqualValues(t, 200, stats.Rows)
	// 200 rows (plus a charge per request) at 400 rows/s: at least half a second, whatever the
	// parallelism.
	assert.GreaterOrEqual(t, time.Since(start), 450*time.Millisecond)
}

func TestScanOptionsValidated(t *testing.T) {
	for _, o := range []ScanOptions{{Splits: -1}, {Splits: MaxScanSplits + 1}, {Parallelism: 65}, {PageSize: -3}} {
		_, err := o.withDefaults(0)
		assert.ErrorIs(t, err, ErrInvalidOption, "%+v", o)
	}
	o, err := ScanOptions{}.withDefaults(6)
	require.NoError(t, err)
	assert.Equal(t, DefaultScanSplits, o.Splits)
	assert.EqualValues(t, 6, o.Consistency)
}

func TestTokenRangesCoverTheRing(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 1000} {
		r := tokenRanges(n)
		require.Len(t, r, n)
		assert.EqualValues(t, int64(-1<<63), r[0][0])
		assert.EqualValues(t, int64(1<<63-1), r[n-1][1])
		for i := range r {
			assert.Less(t, r[i][0], r[i][1], "n=%d range %d", n, i)
			if i > 0 {
				assert.Equal(t, r[i-1][1], r[i][0], "n=%d: ranges are contiguous", n)
			}
		}
	}
}

// TestAdminIfUnchangedActsOnlyOnTheRecordSeen: a release decided on a RELEASED record is not
// applied once a retry completed it; a purge decided on a COMPLETED record is not applied once
// an operator released it.
func TestAdminIfUnchangedActsOnlyOnTheRecordSeen(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("ns", "seen")
	plant(t, s, key, StatusReleased)
	seen, err := s.Inspect(ctx, key)
	require.NoError(t, err)
	_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("done"), nil })
	require.NoError(t, err)

	_, err = s.ReleaseKey(ctx, key, IfUnchanged(seen))
	require.ErrorIs(t, err, ErrRecordChanged)
	assert.Contains(t, err.Error(), "is COMPLETED with fence 2 now, was RELEASED with fence 1")
	assert.Equal(t, StatusCompleted, readRecord(t, s, key).Status, "nothing was written")

	seen, err = s.Inspect(ctx, key)
	require.NoError(t, err)
	res, err := s.ReleaseKey(ctx, key, IfUnchanged(seen))
	require.NoError(t, err, "the record seen")
	assert.True(t, res.Changed)
	_, err = s.Delete(ctx, key, IfUnchanged(seen))
	require.ErrorIs(t, err, ErrRecordChanged, "released since it was seen")
	_, err = s.Delete(ctx, key, IfUnchanged(nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.ErrorContains(t, err, "IfUnchanged", "the option names itself")
}
