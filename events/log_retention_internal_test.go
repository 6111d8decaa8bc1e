package events

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestRetentionBoundsRowsAndRefusesOlderRetries simulates a week on the Log's clock: every row
// the Log writes carries the retention's TTL (the node counts it on its own clock, so the test
// reads the TTLs rather than waiting for them), the tables' default covers writers without one,
// a retry within the retention is still found and counted once, and a retry past it is refused
// with ErrEventExpired: never counted again, never dropped without a word. The folded total,
// which has no TTL, is still there.
func TestRetentionBoundsRowsAndRefusesOlderRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	session, newLog := logsOn(t, clock)
	l := newLog()
	onTime := Event{Counter: "c", ID: "on-time", Delta: 3, Time: t0}
	require.NoError(t, l.Record(ctx, onTime))
	clock.Advance(10 * time.Minute)
	late := Event{Counter: "c", ID: "late", Delta: 4, Time: t0.Add(time.Second)}
	require.NoError(t, l.Record(ctx, late), "a late event takes a claim")

	ks := l.cfg.Keyspace
	ttl := l.rowTTL()
	require.Equal(t, int(DefaultLogRetention/time.Second)+184, ttl, "the defaults' TTL, as 017 states it")
	ttls := func(stmt string) []int {
		iter := session.Query(stmt).Iter()
		var out []int
		var n *int
		for iter.Scan(&n) {
			require.NotNil(t, n, "a row without a TTL: %s", stmt)
			out = append(out, *n)
		}
		require.NoError(t, iter.Close())
		return out
	}
	for _, stmt := range []string{
		"SELECT TTL(delta) FROM " + ks + ".counter_window_events",
		"SELECT TTL(target) FROM " + ks + ".counter_late_slices",
	} {
		got := ttls(stmt)
		require.NotEmpty(t, got, stmt)
		for _, n := range got {
			assert.InDelta(t, ttl, n, 600, "%s: a TTL of the retention plus the margin", stmt)
		}
	}
	for _, table := range []string{"counter_window_events", "counter_windows", "counter_late_claims", "counter_late_slices"} {
		var def, grace int
		require.NoError(t, session.Query("SELECT default_time_to_live, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
			ks, table).Scan(&def, &grace))
		assert.Equal(t, ttl, def, table)
		assert.Equal(t, 10800, grace, table)
	}

	clock.Advance(time.Minute)
	res, err := l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 7, res.Total)

	clock.Set(t0.Add(DefaultLogRetention - time.Minute))
	require.NoError(t, l.Record(ctx, onTime), "a retry within the retention is found")
	require.NoError(t, l.Record(ctx, late), "and so is a late event's, through its claim")
	total, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 7, total, "each counted once")

	clock.Set(t0.Add(DefaultLogRetention + 2*time.Second))
	for _, e := range []Event{onTime, late} {
		err := l.Record(ctx, e)
		require.ErrorIs(t, err, ErrEventExpired, e.ID)
		assert.Contains(t, err.Error(), e.ID)
	}
	total, err = l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 7, total, "the folded total outlives the rows")
	assert.EqualValues(t, 2, l.Stats().Expired)
	assert.GreaterOrEqual(t, l.Stats().LateEvents, int64(2))
}

// TestRetentionOptionsAreValidated refuses retentions and lags out of range, alone or against
// the window, each error naming its option and value, and defaults the lag to a quarter of the
// retention.
func TestRetentionOptionsAreValidated(t *testing.T) {
	t.Parallel()
	for want, opts := range map[string][]Option{
		"WithLogRetention(1m0s)":      {WithLogRetention(time.Minute)},
		"WithLogRetention(2184h0m0s)": {WithLogRetention(91 * 24 * time.Hour)},
		"WithLogRetention(1h0m0s)":    {WithLogRetention(time.Hour), WithBucketWidth(time.Hour)},
		"WithMaxRollupLag(1s)":        {WithMaxRollupLag(time.Second)},
		"WithMaxRollupLag(96h0m0s)":   {WithMaxRollupLag(4 * 24 * time.Hour)},
		"WithMaxRollupLag(-1s)":       {WithMaxRollupLag(-time.Second)},
	} {
		_, err := newConfig(false, opts)
		if assert.ErrorIs(t, err, ErrInvalidOption, want) {
			assert.Contains(t, err.Error(), want)
		}
	}
	c, err := newConfig(false, nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultLogRetention/4, c.maxLag)
	c, err = newConfig(false, []Option{WithMaxRollupLag(time.Hour), WithLogRetention(30 * 24 * time.Hour)})
	require.NoError(t, err, "options in any order")
	assert.Equal(t, time.Hour, c.maxLag)
}
