package events_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

var t0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func newLog(t testing.TB, clock *testnode.Clock, opts ...events.Option) *events.Log {
	t.Helper()
	session, ks := testnode.NewSession(t)
	opts = append([]events.Option{events.WithKeyspace(ks), events.WithClock(clock.Now), events.WithoutClockCheck()}, opts...)
	l, err := events.NewLog(session, opts...)
	require.NoError(t, err)
	return l
}

func TestLogRecordIsIdempotentAndRollupFoldsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	l := newLog(t, clock)
	for i := range 10 {
		e := events.Event{Counter: "c", ID: fmt.Sprint("e", i), Delta: 2, Time: t0.Add(time.Duration(i) * time.Second)}
		require.NoError(t, l.Record(ctx, e))
		require.NoError(t, l.Record(ctx, e), "re-recording is harmless")
	}
	total, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, total)

	res, err := l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Zero(t, res.Folded, "the windows are still open")

	clock.Advance(3 * time.Hour)
	res, err = l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, 10, res.Folded, "one window per second of events")
	require.EqualValues(t, 20, res.Total)
	res, err = l.Rollup(ctx, "c")
	require.NoError(t, err)
	require.Zero(t, res.Folded, "a second rollup folds nothing")
	require.EqualValues(t, 20, res.Total)

	total, err = l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, total)

	err = l.Record(ctx, events.Event{Counter: "c", ID: "e0", Delta: 2, Time: t0})
	require.NoError(t, err, "a late retry is accepted")
	total, err = l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 20, total, "and finds the event's row in its own window")
	total, err = l.Total(ctx, "missing")
	require.NoError(t, err)
	require.Zero(t, total)
}

func TestLogBadInputGivesTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	l := newLog(t, clock)
	ok := events.Event{Counter: "c", ID: "id", Delta: 1, Time: t0}
	require.NoError(t, l.Record(ctx, ok))
	cases := []struct {
		name string
		e    events.Event
		want error
	}{
		{"empty counter", events.Event{ID: "x", Time: t0}, events.ErrInvalidCounter},
		{"long counter", events.Event{Counter: strings.Repeat("c", 257), ID: "x", Time: t0}, events.ErrInvalidCounter},
		{"bad utf8 counter", events.Event{Counter: "\xff", ID: "x", Time: t0}, events.ErrInvalidCounter},
		{"empty id", events.Event{Counter: "c", Time: t0}, events.ErrInvalidEventID},
		{"long id", events.Event{Counter: "c", ID: strings.Repeat("i", 257), Time: t0}, events.ErrInvalidEventID},
		{"no time", events.Event{Counter: "c", ID: "x"}, events.ErrMissingEventTime},
		{"future", events.Event{Counter: "c", ID: "x", Time: t0.Add(time.Hour)}, events.ErrFutureEvent},
	}
	for _, tc := range cases {
		require.ErrorIs(t, l.Record(ctx, tc.e), tc.want, tc.name)
	}
	_, err := l.Total(ctx, "")
	require.ErrorIs(t, err, events.ErrInvalidCounter)
	_, err = l.Rollup(ctx, strings.Repeat("x", 300))
	require.ErrorIs(t, err, events.ErrInvalidCounter)
	total, err := l.Total(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1, total, "nothing stored was lost")
	_, err = events.NewLog(nil)
	require.ErrorIs(t, err, events.ErrInvalidOption)

	for _, opt := range []events.Option{
		events.WithBucketWidth(7 * time.Minute), events.WithBucketWidth(0), events.WithGracePeriod(0),
		events.WithSettleTime(-1), events.WithMaxClockSkew(2 * time.Hour), events.WithClock(nil),
		events.WithKeyspace("bad-name"), events.WithCounterTables("a", "", "c"), events.WithLateTable("bad-name"),
	} {
		_, err := events.NewLog(&gocql.Session{}, opt)
		require.ErrorIs(t, err, events.ErrInvalidOption)
	}
}

// TestLogTotalsExactUnderDuplicatesAndRacingRollups records every event id several times from
// several writers while two rollup workers fold buckets and readers check that the total
// never goes back, with a clock running at 200x so buckets close during the run.
//
// It is not parallel, so every goroutine that starts during it is its own and must have ended.
func TestLogTotalsExactUnderDuplicatesAndRacingRollups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := testnode.NewClock(t0)
	l := newLog(t, clock, events.WithBucketWidth(time.Minute), events.WithGracePeriod(time.Minute),
		events.WithSettleTime(time.Second))
	_, err := l.Total(ctx, "hits") // the session's connections are up before the snapshot
	require.NoError(t, err)
	running := goleak.IgnoreCurrent()

	const ids, copies, writers = 1500, 3, 8
	type job struct {
		id string
		at time.Time
	}
	jobs := make(chan job, 64)
	var stored sync.Map // ids recorded successfully at least once
	var closed atomic.Int64
	var bg, wg sync.WaitGroup

	bg.Add(1)
	go func() { // the clock: 1 s of event time per 5 ms
		defer bg.Done()
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			clock.Advance(time.Second)
		}
	}()
	for range 2 { // two rollup workers
		bg.Add(1)
		go func() {
			defer bg.Done()
			_ = l.RollupEvery(ctx, time.Millisecond, func(c string, err error) { t.Errorf("rollup: %v", err) }, "hits")
		}()
	}
	var reads atomic.Int64
	for range 2 { // readers: an exact total never goes back
		bg.Go(func() { reads.Add(readTotals(ctx, t, l, "hits", nil, nil)) })
	}
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := l.Record(ctx, events.Event{Counter: "hits", ID: j.id, Delta: 1, Time: j.at})
				switch {
				case err == nil:
					stored.Store(j.id, true)
				case errors.Is(err, events.ErrBucketClosed):
					closed.Add(1)
				default:
					t.Errorf("record %s: %v", j.id, err)
				}
			}
		}()
	}
	for i := range ids {
		j := job{id: fmt.Sprint("evt-", i), at: clock.Now().Add(-time.Duration(rand.IntN(30)) * time.Second)}
		for range copies {
			jobs <- j
		}
	}
	close(jobs)
	wg.Wait()
	cancel()
	bg.Wait()

	want := 0
	stored.Range(func(any, any) bool { want++; return true })
	require.Greater(t, want, ids/2)
	ctx = context.Background()
	total, err := l.Total(ctx, "hits")
	require.NoError(t, err)
	require.EqualValues(t, want, total)
	clock.Advance(time.Hour)
	res, err := l.Rollup(ctx, "hits")
	require.NoError(t, err)
	require.EqualValues(t, want, res.Total)
	total, err = l.Total(ctx, "hits")
	require.NoError(t, err)
	require.EqualValues(t, want, total)
	t.Logf("%d distinct ids stored from %d records, %d refused as closed, %d concurrent reads", want, ids*copies, closed.Load(), reads.Load())
	goleak.VerifyNone(t, append(leakcheck.DriverGoroutines(), running)...)
}

func FuzzValidateCounter(f *testing.F) {
	for _, s := range []string{"", "c", "\xff", strings.Repeat("x", 256), strings.Repeat("x", 257), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, err := range []error{events.ValidateCounter(s), events.ValidateEventID(s)} {
			if err != nil && !errors.Is(err, events.ErrInvalidCounter) && !errors.Is(err, events.ErrInvalidEventID) {
				t.Fatalf("untyped error %v", err)
			}
			if err == nil && (s == "" || len(s) > 256) {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}

// TestObserverSeesLog: the Log reports to the same lwt.Observer an lwt.Store takes: the event
// write and the rollup's LWT (guard's TestObserverSeesGuard shows the guard's).
func TestObserverSeesLog(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	obs := lwt.ObserverFunc(func(o lwt.Observation) {
		mu.Lock()
		seen[o.Kind.String()+":"+o.Op]++
		mu.Unlock()
	})
	var now atomic.Int64 // the clock, in Unix nanoseconds
	now.Store(time.Now().UnixNano())
	log, err := events.NewLog(session, events.WithKeyspace(ks), events.WithObserver(obs),
		events.WithClock(func() time.Time { return time.Unix(0, now.Load()) }), events.WithoutClockCheck())
	require.NoError(t, err)
	require.NoError(t, log.Record(ctx, events.Event{Counter: "c", ID: "e1", Delta: 1, Time: time.Unix(0, now.Load())}))
	now.Add(int64(3 * time.Hour)) // the bucket closes and settles
	_, err = log.Rollup(ctx, "c")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, seen["write:record"])
	assert.Equal(t, 1, seen["lwt:rollup"])
}
