package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

// installBeforeWindows creates a keyspace with the migrations that came before the spread
// layout, as an install of the earlier release has it, and returns an admin session and its name.
func installBeforeWindows(t *testing.T) (*gocql.Session, string) {
	t.Helper()
	id, err := gocql.RandomUUID()
	require.NoError(t, err)
	ks := "t_" + strings.ReplaceAll(id.String(), "-", "")
	admin, err := testnode.Cluster(t).CreateSession()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.Query(`DROP KEYSPACE IF EXISTS ` + ks).Exec()
		admin.Close()
	})
	ms, err := schema.Migrations(schema.WithKeyspace(ks))
	require.NoError(t, err)
	for _, m := range ms {
		if strings.Contains(strings.Join(m.Statements, ";"), "counter_window_events") {
			return admin, ks
		}
		for _, stmt := range m.Statements {
			err := admin.Query(stmt).Exec()
			for try := 0; errors.Is(err, gocql.ErrTimeoutNoResponse) && try < 3; try++ {
				err = admin.Query(stmt).Exec() // a busy node queues schema changes; each is IF NOT EXISTS
			}
			require.NoError(t, err, stmt)
		}
	}
	t.Fatal("no migration creates counter_window_events")
	return nil, ""
}

// TestOldLayoutCounterMigratedInPlace writes counters with the first layout's statements (hour
// buckets in counter_events, the counter_buckets index, an hour-aligned watermark), migrates
// the keyspace, and checks that the totals stay, that new events add to them, and that rollups
// fold the old buckets once they are closed by the old rules.
func TestOldLayoutCounterMigratedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, ks := installBeforeWindows(t)
	q := func(stmt string, values ...any) {
		t.Helper()
		require.NoError(t, admin.Query(strings.ReplaceAll(stmt, "KS.", ks+"."), values...).Exec())
	}
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	oldEvents := func(counter string, bucket time.Time, deltas ...int64) {
		q(`INSERT INTO KS.counter_buckets (counter, bucket) VALUES (?, ?)`, counter, bucket)
		for i, d := range deltas {
			q(`INSERT INTO KS.counter_events (counter, bucket, event_id, delta, recorded_at) VALUES (?, ?, ?, ?, ?)`,
				counter, bucket, fmt.Sprint(bucket.Hour(), "-", i), d, bucket)
		}
	}
	// "rolled": rolled up to 09:00 (total 100), then buckets 09:00 and 10:00.
	q(`INSERT INTO KS.counter_rollups (counter, watermark, total, updated_at) VALUES (?, ?, ?, ?)`, "rolled", hour(9), int64(100), hour(9))
	oldEvents("rolled", hour(8), 1000) // folded before: must not count again
	oldEvents("rolled", hour(9), 2, 3)
	oldEvents("rolled", hour(10), 7)
	// "fresh": never rolled up.
	oldEvents("fresh", hour(8), 3)
	oldEvents("fresh", hour(10), 1, 3)

	_, err := schema.Migrate(ctx, admin, schema.WithKeyspace(ks))
	for try := 0; errors.Is(err, gocql.ErrTimeoutNoResponse) && try < 3; try++ {
		_, err = schema.Migrate(ctx, admin, schema.WithKeyspace(ks)) // what did not run is still pending
	}
	require.NoError(t, err)
	clock := testnode.NewClock(hour(10).Add(30 * time.Minute))
	l, err := events.NewLog(admin, events.WithKeyspace(ks), events.WithClock(clock.Now), events.WithoutClockCheck())
	require.NoError(t, err)
	requireTotal := func(counter string, want int64, why string) {
		t.Helper()
		got, err := l.Total(ctx, counter)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s: %s", counter, why)
	}
	requireTotal("rolled", 112, "the same total after the migration")
	requireTotal("fresh", 7, "the same total after the migration")

	for i, c := range []string{"rolled", "fresh", "rolled"} {
		require.NoError(t, l.Record(ctx, events.Event{Counter: c, ID: fmt.Sprint("new-", i), Delta: 10, Time: clock.Now()}))
	}
	requireTotal("rolled", 132, "new events add to the old total")
	requireTotal("fresh", 17, "new events add to the old total")

	// At 10:30 the old 09:00 bucket is still open by the old rules: nothing is folded past it.
	res, err := l.Rollup(ctx, "rolled")
	require.NoError(t, err)
	require.True(t, res.Watermark.Equal(hour(9)), "watermark %v", res.Watermark)
	requireTotal("rolled", 132, "a capped rollup")
	// At 12:10 both old buckets are closed: everything is folded.
	clock.Set(hour(12).Add(10 * time.Minute))
	for _, c := range []string{"rolled", "fresh"} {
		res, err = l.Rollup(ctx, c)
		require.NoError(t, err)
		require.True(t, res.Watermark.After(hour(12)), "watermark %v", res.Watermark)
	}
	requireTotal("rolled", 132, "after folding the old buckets")
	requireTotal("fresh", 17, "after folding the old buckets")
	require.NoError(t, l.Record(ctx, events.Event{Counter: "fresh", ID: "later", Delta: 1, Time: clock.Now()}))
	requireTotal("fresh", 18, "and it keeps counting")
	res, err = l.Rollup(ctx, "fresh")
	require.NoError(t, err)
	require.EqualValues(t, 17, res.Total, "the open window is not folded")
}
