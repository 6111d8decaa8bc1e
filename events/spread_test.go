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
	"github.com/cassdedup/cassdedup/internal/testnode"
)

// logOn returns another Log over the keyspace of l's session: a second process.
func logOn(t *testing.T, session *gocql.Session, ks string, clock *testnode.Clock, opts ...events.Option) *events.Log {
	t.Helper()
	opts = append([]events.Option{events.WithKeyspace(ks), events.WithClock(clock.Now)}, opts...)
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
	var acked, closed atomic.Int64
	for _, l := range logs {
		bg.Add(1)
		go func() {
			defer bg.Done()
			_ = l.RunRollups(ctx, 5*time.Millisecond, func(c string, err error) { t.Errorf("rollup %s: %v", c, err) })
		}()
	}
	for range 2 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			var last int64
			for ctx.Err() == nil {
				total, err := logs[0].Total(ctx, "views")
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
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				e := events.Event{Counter: "views", ID: fmt.Sprint(w, "-", i), Delta: 1, Time: clock.Now()}
				stored := false
				for c := range 2 { // every event twice, as a retry would, from two processes
					err := logs[(w+i+c)%len(logs)].Record(ctx, e)
					switch {
					case err == nil:
						stored = true
					case errors.Is(err, events.ErrBucketClosed):
						closed.Add(1)
					default:
						t.Errorf("record: %v", err)
						return
					}
				}
				if stored {
					acked.Add(1)
				}
				if i%10 == 0 {
					clock.Advance(time.Second)
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	bg.Wait()
	ctx = context.Background()
	total, err := logs[1].Total(ctx, "views")
	require.NoError(t, err)
	require.EqualValues(t, acked.Load(), total)
	res, err := logs[2].Rollup(ctx, "views")
	require.NoError(t, err)
	require.LessOrEqual(t, clock.Now().Sub(res.Watermark), logs[0].Lag(0)+time.Second, "the watermark keeps up")
	clock.Advance(time.Minute)
	res, err = logs[0].Rollup(ctx, "views")
	require.NoError(t, err)
	require.EqualValues(t, acked.Load(), res.Total)
	t.Logf("%d events acknowledged, %d records refused as closed", acked.Load(), closed.Load())
}
