package events_test

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

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// lateTarget returns the window the late claim of id names, and whether there is a claim
// (own is the event's own window, which starts at its second with the default width).
func lateTarget(t *testing.T, session *gocql.Session, counter string, own time.Time, id string) (time.Time, bool) {
	t.Helper()
	var target time.Time
	iter := session.Query(`SELECT target FROM counter_late_slices WHERE counter = ? AND second = ? AND event_id = ?`,
		counter, own.Truncate(time.Second), id).Iter()
	found := iter.Scan(&target)
	require.NoError(t, iter.Close())
	return target.UTC(), found
}

// requireTotal checks the total that every Log of ls reads.
func requireTotal(t *testing.T, want int64, ls ...*events.Log) {
	t.Helper()
	for _, l := range ls {
		total, err := l.Total(context.Background(), "c")
		require.NoError(t, err)
		require.EqualValues(t, want, total)
	}
}

// TestLateEventCountsOnceWithItsRetries records an event an hour after its window closed (a
// consumer an hour behind its topic): it is accepted, counted once in the window open then,
// and every retry of it counts nothing more: while that window is open (the claim is
// followed), after it closed (its row is found there) and after rollups folded it. A retry of an
// event recorded on time finds its row in its own window and writes no claim.
func TestLateEventCountsOnceWithItsRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0.Add(time.Hour))
	l := logOn(t, session, ks, clock)
	other := logOn(t, session, ks, clock, events.WithParts(7))

	late := events.Event{Counter: "c", ID: "late", Delta: 5, Time: t0.Add(1500 * time.Millisecond)}
	require.NoError(t, l.Record(ctx, late), "an hour late is accepted")
	target, ok := lateTarget(t, session, "c", t0.Add(time.Second), "late")
	require.True(t, ok, "claimed")
	require.Equal(t, clock.Now(), target, "in the window open at the time")
	requireTotal(t, 5, l, other)
	require.NoError(t, other.Record(ctx, late), "a retry while the claim's window is open")
	requireTotal(t, 5, l, other)

	clock.Advance(time.Minute)
	require.NoError(t, l.Record(ctx, late), "a retry after the claim's window closed")
	requireTotal(t, 5, l, other)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 5, res.Total)
	require.NoError(t, other.Record(ctx, late), "a retry after the rollup folded it")
	again, _ := lateTarget(t, session, "c", t0.Add(time.Second), "late")
	require.Equal(t, target, again, "the claim never moved: its row was found")
	requireTotal(t, 5, l, other)

	onTime := events.Event{Counter: "c", ID: "on-time", Delta: 1, Time: clock.Now()}
	require.NoError(t, l.Record(ctx, onTime))
	clock.Advance(24 * time.Hour)
	require.NoError(t, other.Record(ctx, onTime), "a retry a day later finds its row in its own window")
	_, ok = lateTarget(t, session, "c", onTime.Time, "on-time")
	require.False(t, ok, "and claims nothing")
	clock.Advance(time.Minute)
	res, err = l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 6, res.Total)
	requireTotal(t, 6, l, other)
}

// TestLateAndOnTimeRetriesRacing has many goroutines, in two processes with different parts,
// record the same late and on-time event ids at once, then all of them again once every window
// involved closed: each event counts once.
func TestLateAndOnTimeRetriesRacing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0.Add(time.Hour))
	logs := []*events.Log{logOn(t, session, ks, clock), logOn(t, session, ks, clock, events.WithParts(7))}

	const n = 30
	var evs []events.Event
	for i := range n {
		evs = append(evs,
			events.Event{Counter: "c", ID: fmt.Sprint("late-", i), Delta: 1, Time: t0.Add(time.Duration(i) * 300 * time.Millisecond)},
			events.Event{Counter: "c", ID: fmt.Sprint("now-", i), Delta: 1, Time: clock.Now()})
	}
	recordAll := func() {
		var wg sync.WaitGroup
		errs := make(chan error, 16*len(evs))
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range evs {
					errs <- logs[g%2].Record(ctx, evs[(i+g*7)%len(evs)])
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	recordAll()
	requireTotal(t, 2*n, logs...)
	clock.Advance(time.Hour)
	recordAll()
	requireTotal(t, 2*n, logs...)
	res, err := logs[0].Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 2*n, res.Total)
}

// TestLateTotalsExactWithRollersRunning records events on time, half a minute late and two
// hours late, each twice from two processes, while the injected clock moves, three Logs run
// RunRollups and readers check that the total never goes back; at the end the total equals
// the events acknowledged, and nothing was refused.
func TestLateTotalsExactWithRollersRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0.Add(3 * time.Hour))
	logs := []*events.Log{logOn(t, session, ks, clock), logOn(t, session, ks, clock), logOn(t, session, ks, clock)}

	var bg sync.WaitGroup
	var acked atomic.Int64
	for _, l := range logs {
		bg.Add(1)
		go func() {
			defer bg.Done()
			_ = l.RunRollups(ctx, 5*time.Millisecond, func(c string, err error) { t.Errorf("rollup %s: %v", c, err) })
		}()
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		var last int64
		for ctx.Err() == nil {
			total, err := logs[0].Total(ctx, "c")
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Errorf("total: %v", err)
				return
			}
			if total < last {
				t.Errorf("total went back from %d to %d", last, total)
			}
			last = total
		}
	}()
	lags := []time.Duration{0, 30 * time.Second, 2 * time.Hour}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				e := events.Event{Counter: "c", ID: fmt.Sprint(w, "-", i), Delta: 1, Time: clock.Now().Add(-lags[i%len(lags)])}
				for c := range 2 {
					if err := logs[(w+i+c)%len(logs)].Record(ctx, e); err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("record %s: %v", e.ID, err)
						return
					}
				}
				acked.Add(1)
				if i%10 == 0 {
					clock.Advance(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	bg.Wait()
	requireTotal(t, acked.Load(), logs...)
	clock.Advance(time.Minute)
	res, err := logs[1].Rollup(context.Background(), "c")
	require.NoError(t, err)
	require.EqualValues(t, acked.Load(), res.Total)
	require.EqualValues(t, 4*60, acked.Load(), "nothing refused")
}

// TestLateRetryOfAnEventInTheFirstLayout retries, after its window closed, an event that an
// earlier release recorded in counter_events: it is found there and not counted again.
func TestLateRetryOfAnEventInTheFirstLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0.Add(3 * time.Hour))
	l := logOn(t, session, ks, clock)
	at := t0.Add(10 * time.Minute)
	require.NoError(t, session.Query(`INSERT INTO counter_events (counter, bucket, event_id, delta, recorded_at) VALUES (?, ?, ?, ?, ?)`,
		"c", t0, "old", 3, at).Exec())
	require.NoError(t, session.Query(`INSERT INTO counter_buckets (counter, bucket) VALUES (?, ?)`, "c", t0).Exec())
	requireTotal(t, 3, l)
	require.NoError(t, l.Record(ctx, events.Event{Counter: "c", ID: "old", Delta: 3, Time: at}))
	_, claimed := lateTarget(t, session, "c", at.Truncate(time.Second), "old")
	require.False(t, claimed, "found in the first layout")
	requireTotal(t, 3, l)
}
