package counters

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"
)

// TestIndexSizingIsRefusedBelowCapacity: settings whose index partitions would pass
// MaxIndexPartitionRows at MinIndexCapacity increments per second are refused.
func TestIndexSizingIsRefusedBelowCapacity(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]Option{
		{WithShards(16)},                                   // the earlier default: 187,500 rows per 5 min
		{WithIndexBucket(time.Hour)},                       // 562,500 rows an hour
		{WithIndexBucket(7 * time.Minute)},                 // does not divide the hour
		{WithIndexBucket(1500 * time.Millisecond)},         // not whole seconds
		{WithIndexBucket(time.Hour), WithShards(359)},      // 100,279 rows
		{WithIndexBucket(2 * time.Hour), WithShards(1024)}, // over an hour
	} {
		_, err := New(&gocql.Session{}, opts...)
		require.ErrorIs(t, err, ErrInvalidOption)
	}
	for _, opts := range [][]Option{
		nil, {WithIndexBucket(time.Hour), WithShards(360)}, {WithIndexBucket(time.Minute), WithShards(8)},
	} {
		_, err := New(&gocql.Session{}, opts...)
		require.NoError(t, err)
	}
}

// TestListUnappliedFindsHourBucketedIndexRows lists a claim indexed by an earlier release (a
// whole hour, one of 16 shards) beside one indexed in today's buckets.
func TestListUnappliedFindsHourBucketedIndexRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Hour).Add(-20 * time.Minute) // hh:40 of the last hour
	s, session, _ := newStore(t, WithClock(func() time.Time { return at }))
	crash := errors.New("crash")
	s.hooks.afterClaim = func() error { return crash }
	_, err := s.Increment(ctx, Op{Counter: "c", ID: "new", Delta: 1})
	require.ErrorIs(t, err, crash)

	old := at.Add(-10 * time.Minute)
	require.NoError(t, session.Query(`INSERT INTO counter_ops (counter, op_id, delta, status, owner, claimed_at) VALUES (?, ?, ?, ?, ?, ?)`,
		"c", "old", int64(2), statusClaimed, gocql.TimeUUID(), old).Exec())
	require.NoError(t, session.Query(`INSERT INTO counter_ops_by_hour (hour, shard, counter, op_id) VALUES (?, ?, ?, ?)`,
		old.Truncate(time.Hour), 7, "c", "old").Exec())

	claims, err := s.ListUnapplied(ctx, at.Add(-20*time.Minute), at.Add(time.Minute), 10)
	require.NoError(t, err)
	var ids []string
	for _, c := range claims {
		ids = append(ids, c.OpID)
	}
	require.ElementsMatch(t, []string{"new", "old"}, ids)
	claims, err = s.ListUnapplied(ctx, at.Add(-20*time.Minute), at.Add(time.Minute), 1)
	require.NoError(t, err)
	require.Len(t, claims, 1, "the limit holds across shards read in parallel")
}
