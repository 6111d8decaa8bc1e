package events_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/internal/syncbuf"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestStalledRollupIsLoud lets a counter's rollup fall behind on the Log's clock (hours, no
// sleeping): the lag shows in Stats, Rollup folds and says it had stalled, RunRollups returns
// the stall, and the logger and onError hear of it.
func TestStalledRollupIsLoud(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	var logs syncbuf.Buffer
	l := newLog(t, clock, events.WithMaxRollupLag(2*time.Hour), events.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, l.Record(ctx, events.Event{Counter: "c", ID: "1", Delta: 1, Time: t0}))
	clock.Advance(time.Hour)
	st := l.Stats()
	assert.Equal(t, time.Hour, st.RollupLag, "from the counter's first unfolded window")
	assert.Equal(t, "c", st.RollupLagCounter)

	clock.Advance(2 * time.Hour)
	res, err := l.Rollup(ctx, "c")
	require.ErrorIs(t, err, events.ErrRollupStalled)
	var stalled *events.RollupStalledError
	require.True(t, errors.As(err, &stalled))
	assert.Equal(t, "c", stalled.Counter)
	assert.Equal(t, 3*time.Hour, stalled.Lag)
	assert.Equal(t, t0.Add(events.DefaultLogRetention), stalled.Expires)
	assert.Equal(t, 1, res.Folded, "folded all the same")
	assert.EqualValues(t, 1, res.Total)
	assert.Equal(t, 3*time.Hour, res.Lag)
	assert.Less(t, l.Stats().RollupLag, 10*time.Second, "caught up")
	assert.EqualValues(t, 1, l.Stats().Stalled)
	res, err = l.Rollup(ctx, "c")
	require.NoError(t, err, "no longer behind")
	assert.Less(t, res.Lag, 10*time.Second)

	// RunRollups returns the stall of a counter it finds behind.
	require.NoError(t, l.Record(ctx, events.Event{Counter: "d", ID: "1", Delta: 1, Time: clock.Now()}))
	clock.Advance(3 * time.Hour)
	var heard sync.Map
	err = l.RunRollups(ctx, time.Millisecond, func(counter string, err error) { heard.Store(counter, err) })
	require.ErrorIs(t, err, events.ErrRollupStalled)
	_, ok := heard.Load("d")
	assert.True(t, ok, "onError hears of it")
	assert.Contains(t, logs.String(), "rollup stalled")
	assert.Contains(t, logs.String(), "counter=d")
}

// TestFailingRollupStallsLoudly runs RollupEvery over a rollup table that does not exist, so
// every Rollup fails: once the failures have lasted past the maximum lag on the Log's clock,
// RollupEvery returns an error matching ErrRollupStalled that carries the last failure.
func TestFailingRollupStallsLoudly(t *testing.T) {
	t.Parallel()
	clock := testnode.NewClock(t0)
	l := newLog(t, clock, events.WithMaxRollupLag(2*time.Hour),
		events.WithCounterTables("counter_events", "counter_buckets", "no_such_rollups"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failed := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- l.RollupEvery(ctx, time.Millisecond, func(string, error) {
			select {
			case failed <- struct{}{}:
			default:
			}
		}, "x")
	}()
	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("no rollup failed")
	}
	assert.EqualValues(t, 0, l.Stats().Stalled, "failing, not stalled yet")
	clock.Advance(3 * time.Hour)
	err := <-done
	require.ErrorIs(t, err, events.ErrRollupStalled)
	assert.Contains(t, err.Error(), "no_such_rollups", "with the last failure")
	assert.GreaterOrEqual(t, l.Stats().RollupFailures, int64(2))
	assert.GreaterOrEqual(t, l.Stats().RollupLag, 3*time.Hour)
}

// TestTotalsRefuseOverflow records deltas whose sum leaves the int64 range: in one partition
// (the node's sum), across windows, across the rollup and its tail, and below zero. Each read
// and fold fails with ErrOverflow instead of wrapping, and a failed fold moves nothing.
func TestTotalsRefuseOverflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	l := newLog(t, clock, events.WithParts(1))
	rec := func(counter, id string, delta int64, at time.Time) {
		t.Helper()
		require.NoError(t, l.Record(ctx, events.Event{Counter: counter, ID: id, Delta: delta, Time: at}))
	}
	rec("part", "a", math.MaxInt64, t0)
	rec("part", "b", 1, t0)
	rec("windows", "a", math.MaxInt64, t0)
	rec("windows", "b", 1, t0.Add(time.Second))
	rec("below", "a", math.MinInt64, t0)
	rec("below", "b", -1, t0.Add(time.Second))
	rec("tail", "a", math.MaxInt64, t0)
	for _, c := range []string{"part", "windows", "below"} {
		_, err := l.Total(ctx, c)
		require.ErrorIs(t, err, events.ErrOverflow, c)
	}
	clock.Advance(time.Minute)
	for _, c := range []string{"part", "windows", "below"} {
		_, err := l.Rollup(ctx, c)
		require.ErrorIs(t, err, events.ErrOverflow, c)
		p, err := l.PlanRollup(ctx, c)
		require.ErrorIs(t, err, events.ErrOverflow, c)
		assert.Zero(t, p.Watermark)
	}
	res, err := l.Rollup(ctx, "tail")
	require.NoError(t, err)
	require.EqualValues(t, int64(math.MaxInt64), res.Total)
	rec("tail", "b", 1, clock.Now())
	_, err = l.Total(ctx, "tail")
	require.ErrorIs(t, err, events.ErrOverflow, "the rollup plus its tail")
	clock.Advance(time.Minute)
	_, err = l.Rollup(ctx, "tail")
	require.ErrorIs(t, err, events.ErrOverflow)
	_, err = l.Total(ctx, "tail")
	require.ErrorIs(t, err, events.ErrOverflow, "the watermark did not move")
}

// TestCounterNamesRefuseControlCharacters: a counter named "c\x00d" counted into "c" where a
// name ends at its first NUL (a command line, cqlsh, a log line). Control characters are
// refused before anything is written or read; the session is never connected, so a call that
// got past the check would fail differently.
func TestCounterNamesRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	for _, name := range []string{"c\x00d", "c\x00", "c\nd", "c\rd", "c\x1bd", "c\x7fd", "c\u0085d"} {
		require.ErrorIs(t, events.ValidateCounter(name), events.ErrInvalidCounter, "%q", name)
		require.ErrorIs(t, l.Record(ctx, events.Event{Counter: name, ID: "x", Delta: 1, Time: time.Now()}), events.ErrInvalidCounter, "%q", name)
		_, err := l.Total(ctx, name)
		require.ErrorIs(t, err, events.ErrInvalidCounter, "%q", name)
		_, err = l.Rollup(ctx, name)
		require.ErrorIs(t, err, events.ErrInvalidCounter, "%q", name)
		_, err = l.PlanRollup(ctx, name)
		require.ErrorIs(t, err, events.ErrInvalidCounter, "%q", name)
	}
	for _, name := range []string{"c", "c d", "café", "c\u200dd", "c/d:e"} {
		require.NoError(t, events.ValidateCounter(name), "%q", name)
	}
}

// TestNilLogArguments: every exported method of *Log answers a nil receiver and a nil context
// with lwt.ErrInvalidArgument, and the getters of a nil Log return zeros, none panicking.
func TestNilLogArguments(t *testing.T) {
	t.Parallel()
	var nilLog *events.Log
	assert.NotPanics(t, func() { assert.Zero(t, nilLog.Lag(time.Second)) })
	assert.NotPanics(t, func() { assert.Zero(t, nilLog.Stats()) })
	_, err := events.NewLog(nil)
	require.ErrorIs(t, err, events.ErrInvalidOption)
	var typedNil *gocql.Session
	_, err = events.NewLog(typedNil)
	require.ErrorIs(t, err, events.ErrInvalidOption)
	var typedNilObserver *nopObserver
	_, err = events.NewLog(&gocql.Session{}, events.WithObserver(typedNilObserver))
	require.ErrorIs(t, err, events.ErrInvalidOption)
	assert.Contains(t, err.Error(), "WithObserver(*events_test.nopObserver(nil))")
	_, err = events.NewLog(&gocql.Session{}, events.WithObserver(nil), events.WithLogger(nil))
	require.NoError(t, err, "untyped nils mean none")
	valid, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	argchecktest.Refused(t, lwt.ErrInvalidArgument, valid, map[string]func(context.Context, *events.Log) error{
		"PlanRollup": func(ctx context.Context, l *events.Log) error { _, err := l.PlanRollup(ctx, "c"); return err },
		"RunRollups": func(ctx context.Context, l *events.Log) error { return l.RunRollups(ctx, time.Second, nil) },
	})
}

// nopObserver is an lwt.Observer whose method uses its receiver, as most do.
type nopObserver struct{ n int }

func (o *nopObserver) Observe(lwt.Observation) { o.n++ }
