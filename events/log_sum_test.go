package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// rowSum sums counter's event rows client-side, each event id once: what a total must equal.
func rowSum(t *testing.T, session *gocql.Session, counter string) int64 {
	t.Helper()
	iter := session.Query(`SELECT counter, event_id, delta FROM counter_window_events`).Iter()
	seen := make(map[string]struct{})
	var c, id string
	var delta, sum int64
	for iter.Scan(&c, &id, &delta) {
		if _, dup := seen[id]; c == counter && !dup {
			seen[id] = struct{}{}
			sum += delta
		}
	}
	require.NoError(t, iter.Close())
	return sum
}

// TestAggregatedTotalMatchesRowSum checks the totals the node sums (one aggregate per part,
// with the rollup row read beside the index) against the event rows summed by id, while eight writers record every
// event two or three times, the injected clock closes a window a few events apart, two Logs
// roll up side by side and two readers read. Windows whose second is 0 mod 3 are written with
// 4 parts, 1 mod 3 with 7 parts, and 2 mod 3 with 4 parts and retried with 7: a window of each
// single parts value and a window written with two parts values in every tail.
func TestAggregatedTotalMatchesRowSum(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0)
	four := logOn(t, session, ks, clock, events.WithParts(4))
	seven := logOn(t, session, ks, clock, events.WithParts(7))

	var bg sync.WaitGroup
	for _, l := range []*events.Log{four, seven} {
		bg.Go(func() {
			_ = l.RunRollups(ctx, 5*time.Millisecond, func(c string, err error) { t.Errorf("rollup %s: %v", c, err) })
		})
	}
	var counts writeCounts
	for _, l := range []*events.Log{four, seven} {
		bg.Go(func() { readTotals(ctx, t, l, "views", counts.stored.Load, counts.tried.Load) })
	}
	writeEvents(ctx, t, clock, "views", 8, 60, 6, &counts, func(_, i int, e events.Event) []*events.Log {
		first, retry := four, four
		switch e.Time.Unix() % 3 {
		case 1:
			first, retry = seven, seven
		case 2:
			retry = seven
		}
		return []*events.Log{first, retry, retry}[:2+i%2]
	})
	cancel()
	bg.Wait()

	ctx = context.Background()
	want := rowSum(t, session, "views")
	require.EqualValues(t, counts.stored.Load(), want, "every acknowledged event stored once")
	fresh := logOn(t, session, ks, clock) // no watermark seen: reads the row, then the tail
	for _, l := range []*events.Log{four, seven, fresh} {
		total, err := l.Total(ctx, "views")
		require.NoError(t, err)
		require.Equal(t, want, total, "while windows are still unfolded")
	}
	clock.Advance(time.Minute)
	res, err := fresh.Rollup(ctx, "views")
	require.NoError(t, err)
	require.Equal(t, want, res.Total)
	for _, l := range []*events.Log{four, seven, fresh} {
		total, err := l.Total(ctx, "views")
		require.NoError(t, err)
		require.Equal(t, want, total, "once everything is folded")
	}
}

// TestTotalAfterRollupRowRewound rewinds a counter's rollup row below the watermark a Log has
// seen (as restoring an old backup of the row would): the Log's next total must not trust the
// watermark it remembers, and reads the counter from the row again.
func TestTotalAfterRollupRowRewound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0)
	l := logOn(t, session, ks, clock)
	for i := range 20 {
		require.NoError(t, l.Record(ctx, events.Event{Counter: "c", ID: fmt.Sprint(i), Delta: 1, Time: clock.Now()}))
		clock.Advance(500 * time.Millisecond)
	}
	clock.Advance(time.Minute)
	res, err := l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, res.Total)
	total, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, total)

	require.NoError(t, session.Query(`UPDATE counter_rollups SET watermark = ?, total = 0 WHERE counter = ?`, t0, "c").Exec())
	total, err = l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, total, "the windows after the rewound watermark are read again")
}
