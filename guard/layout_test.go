package guard_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// layoutRows reads the group's rows of guard_layouts: since to buckets.
func layoutRows(t *testing.T, session *gocql.Session, ks, group string) map[int64]int {
	t.Helper()
	rows := map[int64]int{}
	iter := session.Query(`SELECT since, buckets FROM `+ks+`.guard_layouts WHERE consumer_group = ?`, group).Iter()
	var since int64
	var buckets int
	for iter.Scan(&since, &buckets) {
		rows[since] = buckets
	}
	require.NoError(t, iter.Close())
	return rows
}

// partitionRows counts the rows of each partition of a windowed table (bucketed or by-window
// index) of one scope, by window start and bucket.
func partitionRows(t *testing.T, session *gocql.Session, ks, table string, scope guard.Scope) map[[2]int64]int {
	t.Helper()
	got := map[[2]int64]int{}
	iter := session.Query(`SELECT consumer_group, topic, partition, window_start, bucket FROM ` + ks + `.` + table).Iter()
	var group, topic string
	var partition int32
	var start int64
	var bucket int
	for iter.Scan(&group, &topic, &partition, &start, &bucket) {
		if (guard.Scope{Group: group, Topic: topic, Partition: partition}) == scope {
			got[[2]int64{start, int64(bucket)}]++
		}
	}
	require.NoError(t, iter.Close())
	return got
}

// TestLayoutOldReleaseRecordFoundAfterSwitch writes a message as an earlier release did (the
// bucketed table, 1 min windows, one bucket, no layout recorded), then lets a guard of this
// release record the group's layouts and move past the switch to 8 buckets: the old message,
// redelivered before and after the switch, runs no handler, by Process and by ProcessBatch,
// and a new message lands in its bucket of the new layout.
func TestLayoutOldReleaseRecordFoundAfterSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	t0 := time.Now().UTC().Truncate(time.Minute)
	clock := testnode.NewClock(t0.Add(10 * time.Second))
	scope := guard.Scope{Group: "g", Topic: "orders", Partition: 2}
	old := guard.Message{Scope: scope, ID: "old-1", Time: t0.Add(5 * time.Second)}

	store := bucketedStore(t, session, ks, time.Minute)
	begun, err := store.BeginBatch(ctx, partitionOf(old), []lwt.BatchItem{{Key: old.ID}})
	require.NoError(t, err)
	require.NotNil(t, begun[0].Claim)
	for _, err := range store.FinishBatch(ctx, []lwt.BatchEnd{{Claim: begun[0].Claim, Status: lwt.StatusCompleted}}) {
		require.NoError(t, err)
	}

	g := guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck())
	runs := newRunCounter()
	out, err := g.Process(ctx, old, runs.handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Duplicate, out)
	rows := layoutRows(t, session, ks, "g")
	require.Len(t, rows, 2, "the legacy layout and the switch to the defaults")
	var switchAt int64
	for since, buckets := range rows {
		if buckets == guard.DefaultBatchBuckets {
			switchAt = since
		}
	}
	assert.Zero(t, switchAt%60, "the switch is on a window boundary")
	assert.Greater(t, switchAt, clock.Now().Add(lwt.MaxClockSkew).Unix(), "the switch is ahead of every time written before")

	clock.Set(time.Unix(switchAt, 0).Add(30 * time.Second))
	res, err := g.ProcessBatch(ctx, []guard.Message{old}, runs.handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Duplicate, res[0].Outcome)
	out, err = g.Process(ctx, old, runs.handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Duplicate, out)
	assert.Zero(t, runs.count(old.ID), "the old record answered every redelivery")

	fresh := guard.Message{Scope: scope, ID: "new-1", Time: clock.Now()}
	res, err = g.ProcessBatch(ctx, []guard.Message{fresh}, runs.handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Processed, res[0].Outcome)
	bucket := int64(xxhash.Sum64String(fresh.ID) % guard.DefaultBatchBuckets)
	assert.Equal(t, map[[2]int64]int{{t0.Unix(), 0}: 1, {switchAt, bucket}: 1},
		partitionRows(t, session, ks, "processed_messages_bucketed", scope))
	out, err = g.Process(ctx, fresh, runs.handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Duplicate, out)
	assert.Equal(t, 1, runs.count(fresh.ID))
}

// TestLayoutChangeByUser: a guard configured with more buckets joins a group that has a
// layout; it records its own from a boundary LayoutSwitchDelay ahead, messages processed by
// either guard before and after the switch are found by the other, and the guard with the old
// settings follows the recorded change instead of reverting it.
func TestLayoutChangeByUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(time.Now().UTC().Truncate(time.Minute))
	scope := guard.Scope{Group: "g", Topic: "orders", Partition: 0}
	a := guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck())
	runs := newRunCounter()
	msg := func(id string) guard.Message { return guard.Message{Scope: scope, ID: id, Time: clock.Now()} }

	// Past the first switch, onto the default layout.
	_, err := a.Process(ctx, msg("warm"), runs.handle)
	require.NoError(t, err)
	clock.Advance(5 * time.Minute)
	before := []guard.Message{msg("a-1"), msg("a-2"), msg("a-3")}
	_, err = a.ProcessBatch(ctx, before, runs.handle)
	require.NoError(t, err)

	b := guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck(), guard.WithBatchBuckets(16))
	res, err := b.ProcessBatch(ctx, before, runs.handle)
	require.NoError(t, err)
	for i := range res {
		assert.Equal(t, guard.Duplicate, res[i].Outcome, before[i].ID)
	}
	rows := layoutRows(t, session, ks, "g")
	require.Len(t, rows, 3)
	var change int64
	for since, buckets := range rows {
		if buckets == 16 {
			change = since
		}
	}
	require.NotZero(t, change)
	assert.GreaterOrEqual(t, change, clock.Now().Add(guard.LayoutSwitchDelay).Unix())

	clock.Set(time.Unix(change, 0).Add(time.Minute))
	after := []guard.Message{msg("b-1"), msg("b-2"), msg("b-3")}
	res, err = b.ProcessBatch(ctx, after, runs.handle)
	require.NoError(t, err)
	for i := range res {
		assert.Equal(t, guard.Processed, res[i].Outcome, after[i].ID)
	}
	for _, m := range append(before, after...) {
		out, err := a.Process(ctx, m, runs.handle)
		require.NoError(t, err)
		assert.Equal(t, guard.Duplicate, out, m.ID)
		res, err := a.ProcessBatch(ctx, []guard.Message{m}, runs.handle)
		require.NoError(t, err)
		assert.Equal(t, guard.Duplicate, res[0].Outcome, m.ID)
		assert.Equal(t, 1, runs.count(m.ID), m.ID)
	}
	for key := range partitionRows(t, session, ks, "processed_messages_bucketed", scope) {
		if key[0] >= change {
			assert.Less(t, key[1], int64(16))
		}
	}
	assert.Len(t, layoutRows(t, session, ks, "g"), 3, "the guard with the old settings follows the change")
}

// TestLayoutConcurrentAcrossSwitch delivers the same ids from many goroutines, through two
// guards, while the clock moves across the group's switch: each handler runs once. One set of
// ids goes through ProcessBatch and another through Process (Process finds what ProcessBatch
// processed, not its running claims, and ProcessBatch reads only its own table), then every id
// is redelivered through Process, and the batched ones through ProcessBatch too.
func TestLayoutConcurrentAcrossSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	t0 := time.Now().UTC().Truncate(time.Minute)
	clock := testnode.NewClock(t0)
	guards := []*guard.Guard{guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck()), guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck())}
	scope := guard.Scope{Group: "g", Topic: "orders", Partition: 1}
	const ids = 24
	var batched, single []guard.Message
	for i := range ids {
		// Times on both sides of the switch (at most 3 min after t0).
		at := t0.Add(time.Duration(i) * 7 * time.Second)
		batched = append(batched, guard.Message{Scope: scope, ID: "b-" + itoa(i), Time: at})
		single = append(single, guard.Message{Scope: scope, ID: "p-" + itoa(i), Time: at})
	}
	runs := newRunCounter()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			g := guards[w%2]
			for round := range 3 {
				if w == 0 && round == 1 {
					clock.Set(t0.Add(4 * time.Minute)) // past the switch
				}
				if w%2 == 0 {
					_, err := g.ProcessBatch(ctx, batched, runs.handle)
					assert.NoError(t, err)
					continue
				}
				for _, m := range single {
					_, err := g.Process(ctx, m, runs.handle)
					if err != nil {
						assert.ErrorIs(t, err, lwt.ErrInProgress)
					}
				}
			}
		})
	}
	wg.Wait()
	for i, m := range append(batched, single...) {
		for _, g := range guards {
			deliver(t, ctx, g, m, runs.handle)
			if i < ids { // ProcessBatch reads its own table only: Process records elsewhere
				res, err := g.ProcessBatch(ctx, []guard.Message{m}, runs.handle)
				require.NoError(t, err)
				assert.Equal(t, guard.Duplicate, res[0].Outcome, m.ID)
			}
		}
		assert.Equal(t, 1, runs.count(m.ID), m.ID)
	}
}

// TestLayoutBoundsPartitions processes a burst within one window and counts the rows of every
// partition: the default layout spreads them over its 8 buckets, in the bucketed table
// (ProcessBatch) and in the by-window index (Process).
func TestLayoutBoundsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	t0 := time.Now().UTC().Truncate(time.Minute)
	clock := testnode.NewClock(t0)
	g := guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck())
	scope := guard.Scope{Group: "g", Topic: "orders", Partition: 4}
	_, err := g.Process(ctx, guard.Message{Scope: scope, ID: "first"}, newRunCounter().handle)
	require.NoError(t, err)
	clock.Set(t0.Add(5 * time.Minute)) // past the switch from the legacy layout
	start := clock.Now().Unix()
	const n = 800
	var batch, single []guard.Message
	for i := range n {
		batch = append(batch, guard.Message{Scope: scope, ID: "b-" + itoa(i), Time: clock.Now()})
		if i < n/4 {
			single = append(single, guard.Message{Scope: scope, ID: "p-" + itoa(i)})
		}
	}
	runs := newRunCounter()
	for i := 0; i < n; i += 100 {
		_, err := g.ProcessBatch(ctx, batch[i:i+100], runs.handle)
		require.NoError(t, err)
	}
	for _, m := range single {
		_, err := g.Process(ctx, m, runs.handle)
		require.NoError(t, err)
	}
	check := func(table string, total int) {
		rows := 0
		for key, count := range partitionRows(t, session, ks, table, scope) {
			if key[0] < start {
				continue
			}
			assert.Equal(t, start, key[0], table)
			assert.Less(t, count, 2*total/guard.DefaultBatchBuckets, "%s partition %v", table, key)
			rows += count
		}
		assert.Equal(t, total, rows, table)
		assert.Len(t, partitionRows(t, session, ks, table, scope), guard.DefaultBatchBuckets+boolInt(table == "processed_messages_by_window"), table)
	}
	check("processed_messages_bucketed", n)
	check("processed_messages_by_window", n/4)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func itoa(i int) string {
	return string(rune('a'+i/676)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
}

// TestLayoutRefusals: a layout that cannot hold the declared rate is refused with
// ErrUnboundedPartition, a message too far ahead of the clock cannot be placed by ProcessBatch,
// and a recorded layout out of range is reported, not followed.
func TestLayoutRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	assert.Equal(t, 60, guard.MinBatchBuckets(100_000, time.Minute))
	assert.Equal(t, 6, guard.MinBatchBuckets(guard.DefaultPartitionRate, time.Minute))
	for _, opts := range [][]guard.Option{
		{guard.WithBatchBuckets(1)},
		{guard.WithPartitionRate(100_000)},
		{guard.WithBatchWindow(time.Hour)},
	} {
		_, err := guard.New(session, append(opts, guard.WithKeyspace(ks))...)
		require.ErrorIs(t, err, guard.ErrUnboundedPartition)
		require.ErrorIs(t, err, guard.ErrInvalidOption)
	}
	for _, opts := range [][]guard.Option{
		{guard.WithPartitionRate(0)}, {guard.WithLegacyBatchLayout(0, 1)}, {guard.WithLegacyBatchLayout(time.Minute, 0)},
	} {
		_, err := guard.New(session, append(opts, guard.WithKeyspace(ks))...)
		require.ErrorIs(t, err, guard.ErrInvalidOption)
	}
	_, err := guard.New(session, guard.WithKeyspace(ks), guard.WithPartitionRate(100_000), guard.WithBatchBuckets(60))
	require.NoError(t, err)
	_, err = guard.New(session, guard.WithKeyspace(ks), guard.WithBatchBuckets(1), guard.WithPartitionRate(1_000))
	require.NoError(t, err, "1 bucket holds 1,000 messages/s")

	g := guardOn(t, session, ks)
	readOnly := guard.Scope{Group: "read-only", Topic: "t"}
	require.NoError(t, g.ProcessedIDs(ctx, readOnly, func(string) error { return nil }))
	require.NoError(t, g.ListMessages(ctx, readOnly, time.Time{}, func(guard.MessageRecord) error { return nil }))
	assert.Empty(t, layoutRows(t, session, ks, readOnly.Group), "reads record no layout")
	future := guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "x", Time: time.Now().Add(time.Hour)}
	res, err := g.ProcessBatch(ctx, []guard.Message{future}, newRunCounter().handle)
	require.NoError(t, err)
	assert.Equal(t, guard.Failed, res[0].Outcome)
	assert.ErrorIs(t, res[0].Err, guard.ErrFutureMessage)
	assert.ErrorIs(t, res[0].Err, guard.ErrInvalidMessage)
	out, err := g.Process(ctx, future, newRunCounter().handle)
	require.NoError(t, err, "Process takes it, without the bucketed table")
	assert.Equal(t, guard.Processed, out)

	require.NoError(t, session.Query(`INSERT INTO `+ks+`.guard_layouts (consumer_group, since, window_seconds, buckets) VALUES ('bad', -9223372036854775808, 60, 0)`).Exec())
	_, err = g.ProcessBatch(ctx, []guard.Message{{Scope: guard.Scope{Group: "bad", Topic: "t"}, ID: "y", Time: time.Now()}}, newRunCounter().handle)
	require.NoError(t, err)
	res, _ = g.ProcessBatch(ctx, []guard.Message{{Scope: guard.Scope{Group: "bad", Topic: "t"}, ID: "y", Time: time.Now()}}, newRunCounter().handle)
	assert.ErrorIs(t, res[0].Err, guard.ErrInvalidLayout)
}
