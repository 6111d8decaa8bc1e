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

// logOn returns another Log over the keyspace of l's session: a second process.
func logOn(t *testing.T, session *gocql.Session, ks string, clock *testnode.Clock, opts ...events.Option) *events.Log {
	t.Helper()
	opts = append([]events.Option{events.WithKeyspace(ks), events.WithClock(clock.Now), events.WithoutClockCheck()}, opts...)
	l, err := events.NewLog(session, opts...)
	require.NoError(t, err)
	return l
}

// countParts returns how many event rows each part of a window holds.
func countParts(t *testing.T, session *gocql.Session, counter string, window time.Time, parts int) []int {
	t.Helper()
	out := make([]int, parts)
	for p := range parts {
		require.NoError(t, session.Query(`SELECT count(*) FROM counter_window_events WHERE counter = ? AND bucket = ? AND part = ?`,
			counter, window, p).Scan(&out[p]))
	}
	return out
}

// TestSpreadCounterExactUnderRetries records every event of one hot counter several times,
// from many goroutines and from writers configured with different parts (parts changed while
// a window was open), and checks the rows are spread over the parts and counted once.
func TestSpreadCounterExactUnderRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0)
	four := logOn(t, session, ks, clock, events.WithParts(4))
	seven := logOn(t, session, ks, clock, events.WithParts(7))

	const n, copies = 400, 3
	var wg sync.WaitGroup
	errs := make(chan error, n*copies*2)
	for i := range n {
		at := t0.Add(time.Duration(i%2) * time.Second) // two windows; the second sees both parts
		for c := range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := four
				if i%2 == 1 && c == 1 {
					l = seven // a retry made by a writer with other parts
				}
				errs <- l.Record(ctx, events.Event{Counter: "hot", ID: fmt.Sprint("e", i), Delta: 1, Time: at})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rows := countParts(t, session, "hot", t0, 4)
	for p, r := range rows {
		require.Greater(t, r, n/2/4/2, "part %d of the first window holds its share: %v", p, rows)
	}
	for _, l := range []*events.Log{four, seven} {
		total, err := l.Total(ctx, "hot")
		require.NoError(t, err)
		require.EqualValues(t, n, total, "every event once, whichever parts its copies used")
	}
	clock.Advance(time.Minute)
	res, err := seven.Rollup(ctx, "hot")
	require.NoError(t, err)
	require.EqualValues(t, n, res.Total)
	require.Equal(t, 2, res.Folded)
	total, err := four.Total(ctx, "hot")
	require.NoError(t, err)
	require.EqualValues(t, n, total)
}

// TestTotalWhileWindowsCloseWithConcurrentRollers records events at the clock's time while the
// injected clock moves a second at a time, three Logs (three processes) run RunRollups side by
// side, and readers check that the total never goes back; at the end the total equals the events
// acknowledged and the watermark is within the stated lag of the clock.
func TestTotalWhileWindowsCloseWithConcurrentRollers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(t0)
	logs := []*events.Log{logOn(t, session, ks, clock), logOn(t, session, ks, clock), logOn(t, session, ks, clock)}

	var bg sync.WaitGroup
	var counts writeCounts
	for _, l := range logs {
		bg.Add(1)
		go func() {
			defer bg.Done()
			_ = l.RunRollups(ctx, 5*time.Millisecond, func(c string, err error) { t.Errorf("rollup %s: %v", c, err) })
		}()
	}
	for range 2 {
		bg.Go(func() { readTotals(ctx, t, logs[0], "views", nil, nil) })
	}
	writeEvents(ctx, t, clock, "views", 6, 150, 10, &counts, func(w, i int, _ events.Event) []*events.Log {
		return []*events.Log{logs[(w+i)%len(logs)], logs[(w+i+1)%len(logs)]} // twice, from two processes
	})
	cancel()
	bg.Wait()
	ctx = context.Background()
	total, err := logs[1].Total(ctx, "views")
	require.NoError(t, err)
	require.EqualValues(t, counts.stored.Load(), total)
	res, err := logs[2].Rollup(ctx, "views")
	require.NoError(t, err)
	require.LessOrEqual(t, clock.Now().Sub(res.Watermark), logs[0].Lag(0)+time.Second, "the watermark keeps up")
	clock.Advance(time.Minute)
	res, err = logs[0].Rollup(ctx, "views")
	require.NoError(t, err)
	require.EqualValues(t, counts.stored.Load(), res.Total)
	t.Logf("%d events acknowledged, %d records refused as closed", counts.stored.Load(), counts.refused.Load())
}

// writeCounts counts what writeEvents did: events tried and stored, copies refused as closed.
type writeCounts struct{ tried, stored, refused atomic.Int64 }

// writeEvents runs writers goroutines that each record n events of counter at the clock's
// time, each event once through every Log copies returns for it (retries from several
// processes), and advance the clock a second every advance events. It returns when they are
// done. The clock moves only between writes: a Log's rollups rest on every write landing within
// the settle time of its check (see the package doc), and a clock advanced by other writers
// while a write is in flight on a loaded machine would break that rule rather than test it.
func writeEvents(ctx context.Context, t *testing.T, clock *testnode.Clock, counter string, writers, n, advance int,
	c *writeCounts, copies func(w, i int, e events.Event) []*events.Log) {
	var wg sync.WaitGroup
	var inFlight sync.RWMutex // writes hold it shared, a clock advance exclusively
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				inFlight.RLock()
				e := events.Event{Counter: counter, ID: fmt.Sprint(w, "-", i), Delta: 1, Time: clock.Now()}
				c.tried.Add(1)
				stored, refused, err := recordCopies(ctx, e, copies(w, i, e)...)
				inFlight.RUnlock()
				c.refused.Add(int64(refused))
				if err != nil {
					t.Error(err)
					return
				}
				if stored {
					c.stored.Add(1)
				}
				if i%advance == advance-1 {
					inFlight.Lock()
					clock.Advance(time.Second)
					inFlight.Unlock()
				}
			}
		})
	}
	wg.Wait()
}

// recordCopies records e through each Log in turn, as retries from several processes would:
// stored when one of them stored it, refused the copies refused with ErrBucketClosed (the
// clock moved past its window), and the first other error.
func recordCopies(ctx context.Context, e events.Event, logs ...*events.Log) (stored bool, refused int, err error) {
	for _, l := range logs {
		switch err := l.Record(ctx, e); {
		case err == nil:
			stored = true
		case errors.Is(err, events.ErrBucketClosed):
			refused++
		default:
			return stored, refused, fmt.Errorf("record %s: %w", e.ID, err)
		}
	}
	return stored, refused, nil
}

// readTotals reads counter's total through l until ctx ends, and fails the test when a total
// goes back or, with lo and hi, falls outside [lo() before the read, hi() after it]. It returns
// how many totals it read.
func readTotals(ctx context.Context, t *testing.T, l *events.Log, counter string, lo, hi func() int64) (reads int64) {
	var last int64
	for ; ctx.Err() == nil; reads++ {
		var floor int64
		if lo != nil {
			floor = lo()
		}
		total, err := l.Total(ctx, counter)
		if ctx.Err() != nil {
			return reads
		}
		if err != nil {
			t.Errorf("total: %v", err)
			return reads
		}
		if total < last {
			t.Errorf("total went back from %d to %d", last, total)
		}
		if hi != nil && (total < floor || total > hi()) {
			t.Errorf("total %d: want %d..%d", total, floor, hi())
		}
		last = total
	}
	return reads
}
