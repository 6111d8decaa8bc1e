package events

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestLateClaimStoppedBeforeItsWrite stops a late Record between its claim and its write (a
// crash): a retry while the claim's window is open writes the row there; a retry after that
// window closed moves the claim to the open window, once, even when many retries race.
func TestLateClaimStoppedBeforeItsWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0.Add(time.Hour))
	session, newLog := logsOn(t, clock)
	crashed, other := newLog(), newLog()
	total := func(want int64) {
		t.Helper()
		for _, l := range []*Log{crashed, other} {
			got, err := l.Total(ctx, "c")
			require.NoError(t, err)
			require.EqualValues(t, want, got)
		}
	}

	open := Event{Counter: "c", ID: "open", Delta: 1, Time: t0}
	target, err := crashed.claimLate(ctx, open, t0, time.Time{})
	require.NoError(t, err)
	require.Equal(t, clock.Now(), target)
	total(0) // ... it stops here
	require.NoError(t, other.Record(ctx, open), "the retry writes the claimed window's row")
	total(1)

	stale := Event{Counter: "c", ID: "stale", Delta: 1, Time: t0}
	first, err := crashed.claimLate(ctx, stale, t0, time.Time{})
	require.NoError(t, err)
	clock.Advance(time.Minute) // the claimed window closes without the row
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- []*Log{crashed, other}[g%2].Record(ctx, stale)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total(2)
	var moved time.Time
	require.NoError(t, session.Query(`SELECT target FROM counter_late_claims WHERE counter = ? AND bucket = ? AND event_id = ?`,
		"c", t0, "stale").Scan(&moved))
	require.True(t, moved.After(first), "moved from %v to the open window %v", first, moved)
	clock.Advance(time.Minute)
	res, err := other.Rollup(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Total)
	require.NoError(t, crashed.Record(ctx, stale))
	total(2)
}

// TestLateWaitsForTheWindowToSettle records an event just after its window closed, while a
// slower writer's on-time write of the same event is still in flight: the late path waits
// until the window settled (end + grace + settle time), by which time that write has landed,
// finds it and counts the event once.
func TestLateWaitsForTheWindowToSettle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	session, newLog := logsOn(t, clock)
	slow, l := newLog(), newLog()
	e := Event{Counter: "c", ID: "e", Delta: 1, Time: t0}

	clock.Set(t0.Add(DefaultWindow + DefaultGracePeriod + 300*time.Millisecond)) // closed, not settled
	var waited []time.Duration
	l.late.sleep = func(ctx context.Context, d time.Duration) error {
		waited = append(waited, d)
		require.NoError(t, slow.ensureStarted(ctx, e.Counter, t0))
		require.NoError(t, slow.ensureIndexed(ctx, e.Counter, t0))
		k := partKey{e.Counter, t0.UnixMilli(), partOf(e.ID, slow.cfg.parts)}
		require.NoError(t, slow.writeRows(ctx, k, t0, []*pendingRow{{e: e}}), "the slow on-time write lands within the settle time")
		clock.Advance(d)
		return nil
	}
	require.NoError(t, l.Record(ctx, e))
	require.Equal(t, []time.Duration{DefaultSettleTime - 300*time.Millisecond}, waited)
	got, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1, got, "found on time, not claimed again")
	var claims int
	require.NoError(t, session.Query(`SELECT count(*) FROM counter_late_claims WHERE counter = ? AND bucket = ? AND event_id = ?`,
		"c", t0, "e").Scan(&claims))
	require.Zero(t, claims)
}

// TestOnTimeWriteRecheckedBeforeItIsSent lets an event's window close between Record's check
// and its write (the counter's start and the window's index row take that long): the row is
// not sent into the closed window, where a rollup could already have folded the window without
// it, and Record counts the event once through the late path instead.
func TestOnTimeWriteRecheckedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	session, newLog := logsOn(t, clock)
	l := newLog()
	e := Event{Counter: "c", ID: "e", Delta: 1, Time: t0}

	clock.Set(t0.Add(DefaultWindow + DefaultGracePeriod)) // closed while the write was prepared
	require.ErrorIs(t, l.store(ctx, e, t0), errMissedWindow)
	l.late.sleep = func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
	found, err := l.settledHolds(ctx, e, t0)
	require.NoError(t, err)
	require.False(t, found, "nothing was written into the closed window")

	require.NoError(t, l.Record(ctx, e))
	require.NoError(t, l.Record(ctx, e), "a retry")
	got, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1, got)
	var target time.Time
	require.NoError(t, session.Query(`SELECT target FROM counter_late_slices WHERE counter = ? AND second = ? AND event_id = ?`,
		"c", t0, "e").Scan(&target))
	require.True(t, target.After(t0), "counted in the window open at the retry, %v", target)
}
