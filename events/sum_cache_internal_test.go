package events

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestCachedSumUsedOnlyWhileMarksHold reads a total after a window ended, then poisons the
// sums the reader cached: while no write lands in the window, the next total uses the cached
// sums (and shows the poison), and as soon as another writer records a retry-free event in the
// window (still in its grace period), its part is summed again. Once the window settled, the
// total reads it afresh whatever was cached, and keeps that final sum.
func TestCachedSumUsedOnlyWhileMarksHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	reader, writer := newLog(WithParts(1)), newLog(WithParts(1))
	for i := range 10 {
		require.NoError(t, writer.Record(ctx, Event{Counter: "c", ID: fmt.Sprint(i), Delta: 1, Time: t0}))
	}
	total := func() int64 {
		t.Helper()
		got, err := reader.Total(ctx, "c")
		require.NoError(t, err)
		return got
	}
	clock.Set(t0.Add(DefaultWindow + 2*quietAfter)) // ended a while ago, still open for late writers
	require.EqualValues(t, 10, total())
	k := partKey{"c", t0.UnixMilli(), 0}
	cached, ok := reader.sums.get(k)
	require.True(t, ok)
	require.False(t, cached.final)
	require.Len(t, cached.marks, 1, "one writer's mark")
	cached.sum = 1000
	reader.sums.put(k, cached)
	before := reader.Stats()
	require.EqualValues(t, 1000, total(), "no write landed: the cached sum is used")
	after := reader.Stats()
	require.Equal(t, before.Summed, after.Summed, "nothing summed again")
	require.Equal(t, before.Checks+1, after.Checks, "one partition's marks were read")
	require.Equal(t, before.Reused+1, after.Reused)

	require.NoError(t, writer.Record(ctx, Event{Counter: "c", ID: "in-grace", Delta: 1, Time: t0}))
	require.EqualValues(t, 11, total(), "the new mark sends the part to the node again")
	require.NoError(t, reader.Record(ctx, Event{Counter: "c", ID: "own", Delta: 1, Time: t0}))
	require.EqualValues(t, 12, total(), "a second writer's mark")

	cached, _ = reader.sums.get(k)
	cached.sum = 1000
	reader.sums.put(k, cached)
	clock.Set(t0.Add(DefaultWindow + DefaultGracePeriod + DefaultSettleTime))
	require.EqualValues(t, 12, total(), "a settled window is read afresh")
	cached, _ = reader.sums.get(k)
	require.True(t, cached.final)
	require.EqualValues(t, 12, cached.sum)
}

// TestUnmarkedRowCountedOnceSettled writes a row the way a writer of an earlier release did,
// without a mark, into a window whose sum a reader cached: a total may miss it until the window
// settled (the rolling-upgrade window the package doc states), and counts it from then on.
func TestUnmarkedRowCountedOnceSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	session, newLog := logsOn(t, clock)
	l := newLog(WithParts(1))
	require.NoError(t, l.Record(ctx, Event{Counter: "c", ID: "new", Delta: 1, Time: t0}))
	clock.Set(t0.Add(DefaultWindow + 2*quietAfter))
	got, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1, got)
	require.NoError(t, session.Query(`INSERT INTO counter_window_events (counter, bucket, part, event_id, delta, recorded_at) VALUES (?, ?, 0, 'old', 1, ?)`,
		"c", t0, clock.Now()).Exec())
	clock.Set(t0.Add(DefaultWindow + DefaultGracePeriod + DefaultSettleTime))
	got, err = l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 2, got)
	res, err := l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Total, "the rollup folds the cached final sum")
}

// TestConcurrentRecordsShareWrites records 200 events of one partition from 200 goroutines at
// once: they go out in fewer writes than events (one write in flight per partition, the rest
// queued behind it), and every event counts once.
func TestConcurrentRecordsShareWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Hour)
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	l := newLog(WithParts(1))
	require.NoError(t, l.Record(ctx, Event{Counter: "c", ID: "first", Delta: 1, Time: t0})) // starts and indexes
	writes := l.flush.numbers.Load()
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = l.Record(ctx, Event{Counter: "c", ID: fmt.Sprint(i % 150), Delta: 1, Time: t0})
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	writes = l.flush.numbers.Load() - writes
	t.Logf("%d records in %d writes", n, writes)
	require.Less(t, writes, int64(n), "queued rows share writes")
	got, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 151, got, "each of the 150 ids and the first once")
	require.Eventually(t, func() bool {
		l.flush.mu.Lock()
		defer l.flush.mu.Unlock()
		return len(l.flush.queues) == 0
	}, 10*time.Second, 10*time.Millisecond, "no queue is left behind")
}

// TestSumReadAfterTheEndIsChecked reads totals just after a window ended: a sum read while the
// window filled is read again, but one read after its end is checked by its marks from the next
// total on, and summed again only once a write changed them.
func TestSumReadAfterTheEndIsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	_, newLog := logsOn(t, clock)
	reader, writer := newLog(WithParts(1)), newLog(WithParts(1))
	require.NoError(t, writer.Record(ctx, Event{Counter: "c", ID: "a", Delta: 1, Time: t0}))
	total := func(want int64) LogStats {
		t.Helper()
		got, err := reader.Total(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, want, got)
		return reader.Stats()
	}
	filling := total(1) // read while the window fills
	clock.Set(t0.Add(DefaultWindow + quietAfter/10))
	ended := total(1)
	require.Equal(t, filling.Summed+1, ended.Summed, "a sum read before the end is read again")
	again := total(1)
	require.Equal(t, ended.Summed, again.Summed, "a sum read after the end is not")
	require.Equal(t, ended.Checks+1, again.Checks, "its marks are checked instead")
	require.NoError(t, writer.Record(ctx, Event{Counter: "c", ID: "late-landing", Delta: 1, Time: t0}))
	landed := total(2)
	require.Equal(t, again.Summed+1, landed.Summed, "a write that landed meanwhile sends it to the node again")
}
