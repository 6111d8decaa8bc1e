//go:build faults

package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// tally is what the check found for one primitive.
type tally struct {
	ops, acked, lost, twice, unknown int
	resolution                       string
}

type killCheck struct {
	once, events, counters tally
}

func (c killCheck) report(t *testing.T, scenario string) {
	t.Helper()
	for _, p := range []struct {
		name string
		tl   tally
	}{{"lwt ExecuteOnce", c.once}, {"events Log.Record", c.events}, {"counters Increment", c.counters}} {
		results.add(t, result{Scenario: scenario + ": " + p.name, Operations: p.tl.ops, Acknowledged: p.tl.acked,
			Lost: p.tl.lost, Twice: p.tl.twice, Unknown: p.tl.unknown, Resolution: p.tl.resolution})
	}
}

// keyCheck is what the restarted node holds for one key, before and after the retries.
type keyCheck struct {
	intact                  bool // COMPLETED with the acknowledged result
	retryRan, retryReplayed bool
	totalBefore, totalAfter int64
	valueBefore, valueAfter int64
	incrRetry               counters.Outcome
	incrUnconfirmed         bool
}

// check reads what the restarted node kept, retries every key as a client that never got an
// answer (or got one and retries anyway) would, and accounts for every acknowledged effect.
func (w *killWorkload) check(t *testing.T) killCheck {
	s := w.node.session(t)
	st := newStores(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var started []int
	for i := range w.keys {
		if w.keys[i].started {
			started = append(started, i)
		}
	}
	checks := make([]keyCheck, killKeys)
	require.NoError(t, forEach(started, func(i int) error {
		return again(ctx, func() error { return w.survey(ctx, st, i, &checks[i]) })
	}))
	listedBefore := listUnapplied(ctx, t, st.ctr, w.t0)
	limbo := claimsInLimbo(ctx, t, s, started)
	require.NoError(t, forEach(started, func(i int) error { return w.retry(ctx, st, i, &checks[i]) }))
	listedAfter := listUnapplied(ctx, t, st.ctr, w.t0)

	var c killCheck
	c.once = w.checkOnce(t, started, checks)
	c.events = w.checkEvents(t, started, checks)
	c.counters = w.checkCounters(t, started, checks, listedBefore, listedAfter, limbo)
	return c
}

// survey reads what survived of key i, before anything is retried.
func (w *killWorkload) survey(ctx context.Context, st stores, i int, c *keyCheck) error {
	rec, err := st.once.Get(ctx, lwt.IdempotencyKey(namespace, keyName(i)))
	switch {
	case errors.Is(err, lwt.ErrNotFound):
	case err != nil:
		return err
	default:
		k := &w.keys[i]
		c.intact = k.result != nil && rec.Status == lwt.StatusCompleted && bytes.Equal(rec.Result, k.result)
	}
	if c.totalBefore, err = st.log.Total(ctx, counterName(i)); err != nil {
		return err
	}
	c.valueBefore, err = st.ctr.Value(ctx, counterName(i))
	return err
}

// retry repeats key i's calls: the executor and the counters always, the event log when its
// Record failed (the writer of an acknowledged event has no reason to record it again), and
// reads the totals afterwards.
func (w *killWorkload) retry(ctx context.Context, st stores, i int, c *keyCheck) error {
	runs := w.runs[i].Load()
	var res lwt.Result
	err := again(ctx, func() (err error) {
		res, err = st.once.ExecuteOnce(ctx, lwt.IdempotencyKey(namespace, keyName(i)), w.fn(i), lwt.WithWait())
		return err
	})
	if err != nil {
		return fmt.Errorf("retry %s: %w", keyName(i), err)
	}
	c.retryReplayed, c.retryRan = res.Replay, w.runs[i].Load() > runs
	if w.keys[i].eventErr != nil {
		err := again(ctx, func() error {
			return st.log.Record(ctx, events.Event{Counter: counterName(i), ID: keyName(i), Delta: 1, Time: w.t0})
		})
		if err != nil {
			return fmt.Errorf("record %s again: %w", keyName(i), err)
		}
	}
	err = again(ctx, func() (err error) {
		c.incrRetry, err = st.ctr.Increment(ctx, counters.Op{Counter: counterName(i), ID: keyName(i), Delta: 1})
		return err
	})
	if errors.Is(err, counters.ErrUnconfirmed) {
		c.incrUnconfirmed, err = true, nil
	}
	if err != nil {
		return fmt.Errorf("increment %s again: %w", keyName(i), err)
	}
	return again(ctx, func() (err error) {
		if c.totalAfter, err = st.log.Total(ctx, counterName(i)); err != nil {
			return err
		}
		c.valueAfter, err = st.ctr.Value(ctx, counterName(i))
		return err
	})
}

// again calls f until it returns nil or an error that a client would not retry, or ctx ends. A
// node just restarted on a loaded machine answers some requests with a timeout; a client tries
// them again, and so does the check, which is about what the node kept, not how fast it is.
func again(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// transient reports whether err is a timeout, an unavailable node or an unknown outcome: what
// a client retries.
func transient(err error) bool {
	return retryable(err) || errors.Is(err, lwt.ErrOutcomeUnknown)
}

// retryable reports whether err is a timeout or an unavailable node.
func retryable(err error) bool {
	var (
		writeTO     *gocql.RequestErrWriteTimeout
		readTO      *gocql.RequestErrReadTimeout
		unavailable *gocql.RequestErrUnavailable
	)
	return errors.As(err, &writeTO) || errors.As(err, &readTO) || errors.As(err, &unavailable) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, gocql.ErrNoConnections)
}

func (w *killWorkload) checkOnce(t *testing.T, started []int, checks []keyCheck) tally {
	var tl tally
	ages := ageSpan{kill: w.killed.Sub(w.killing)}
	var replayed, ran, ranBefore, unknownErrs int
	for _, i := range started {
		k, c := &w.keys[i], &checks[i]
		tl.ops++
		assert.True(t, c.retryRan != c.retryReplayed, "%s: a retry either replays or runs", keyName(i))
		assert.LessOrEqual(t, w.runs[i].Load(), int32(2), "%s: runs", keyName(i))
		if k.result != nil {
			tl.acked++
			if !c.intact {
				tl.lost++
				ages.add(k.onceAt.Sub(w.killing))
			}
			if c.retryRan {
				tl.twice++
			}
			continue
		}
		tl.unknown++
		if errors.Is(k.onceErr, lwt.ErrOutcomeUnknown) {
			unknownErrs++
		}
		if c.retryReplayed {
			replayed++
		} else {
			ran++
			if w.runs[i].Load() > 1 {
				ranBefore++
			}
		}
	}
	tl.resolution = fmt.Sprintf("%d were lwt.ErrOutcomeUnknown; on retry %d replayed the result stored before the kill, "+
		"%d ran the function (%d of them had run it before the kill, result not stored)%s", unknownErrs, replayed, ran, ranBefore, ages)
	return tl
}

func (w *killWorkload) checkEvents(t *testing.T, started []int, checks []keyCheck) tally {
	var tl tally
	ages := ageSpan{kill: w.killed.Sub(w.killing)}
	var landed, sum int64
	for _, i := range started {
		k, c := &w.keys[i], &checks[i]
		tl.ops++
		assert.LessOrEqual(t, c.totalBefore, int64(1), "%s: total before the retries", keyName(i))
		if k.eventErr == nil {
			tl.acked++
			if c.totalBefore == 0 {
				tl.lost++
				ages.add(k.eventAt.Sub(w.killing))
			}
		} else {
			tl.unknown++
			landed += c.totalBefore
		}
		sum += c.totalAfter
	}
	// Exact: every event recorded once, except the acknowledged ones the crash lost.
	assert.Equal(t, int64(tl.ops-tl.lost), sum, "sum of the totals after the failed events were recorded again")
	tl.resolution = fmt.Sprintf("recorded again: %d had been stored, %d had not; totals after: %d = %d events - %d lost%s",
		landed, int64(tl.unknown)-landed, sum, tl.ops, tl.lost, ages)
	return tl
}

func (w *killWorkload) checkCounters(t *testing.T, started []int, checks []keyCheck, listedBefore, listedAfter map[string]bool, limbo map[string]string) tally {
	var tl tally
	ages := ageSpan{kill: w.killed.Sub(w.killing)}
	var dup, applied, unconfirmed, incremented int
	unconfirmedSet := map[string]bool{}
	for _, i := range started {
		k, c := &w.keys[i], &checks[i]
		tl.ops++
		if c.incrUnconfirmed {
			unconfirmedSet[keyName(i)] = true
		}
		if c.valueAfter > 1 {
			tl.twice++
		}
		if k.incrErr == nil && k.incr == counters.Applied {
			tl.acked++
			if c.valueBefore != 1 || c.incrUnconfirmed || c.incrRetry != counters.Duplicate {
				tl.lost++
				ages.add(k.incrAt.Sub(w.killing))
			}
			continue
		}
		tl.unknown++
		switch {
		case c.incrUnconfirmed:
			unconfirmed++
			incremented += int(c.valueBefore)
		case c.incrRetry == counters.Duplicate:
			dup++
		default:
			applied++
		}
	}
	// The repair listing is exact: it names the operations whose retry is ErrUnconfirmed, no
	// more and no fewer, before and after the retries.
	assert.Equal(t, unconfirmedSet, listedBefore, "ListUnapplied before the retries; claims whose Paxos round the kill "+
		"interrupted (status by a plain read → by a serial read, which finishes the round): %v", limbo)
	assert.Equal(t, unconfirmedSet, listedAfter, "ListUnapplied after the retries")
	tl.resolution = fmt.Sprintf("on retry %d were duplicates (had applied), %d applied now, %d ErrUnconfirmed and listed "+
		"by ListUnapplied (increment done: %d, not done: %d)%s", dup, applied, unconfirmed, incremented, unconfirmed-incremented, ages)
	if len(limbo) > 0 {
		tl.resolution += fmt.Sprintf("; %d claims had a Paxos round the kill interrupted", len(limbo))
	}
	return tl
}

// claimsInLimbo finds the operations whose claim row a plain read of counter_ops shows in
// another state than a serial read does: a Paxos round (the claim, the mark or the release) that
// the kill interrupted after its proposal was accepted and before it was committed. The serial
// read commits it, so this runs after the listing it explains.
func claimsInLimbo(ctx context.Context, t *testing.T, s *gocql.Session, started []int) map[string]string {
	t.Helper()
	const read = `SELECT status FROM counter_ops WHERE counter = ? AND op_id = ?`
	var mu sync.Mutex
	out := map[string]string{}
	require.NoError(t, forEach(started, func(i int) error {
		plain := "none"
		var status string
		switch err := s.Query(read, counterName(i), keyName(i)).WithContext(ctx).Scan(&status); {
		case err == nil:
			plain = status
		case !errors.Is(err, gocql.ErrNotFound):
			return err
		}
		serial := "none"
		row, found, err := cas.ReadSerial(ctx, s.Query(read, counterName(i), keyName(i)), gocql.Serial)
		if err != nil {
			return err
		}
		if found {
			serial, _ = row["status"].(string)
		}
		if plain != serial {
			mu.Lock()
			out[keyName(i)] = plain + " → " + serial
			mu.Unlock()
		}
		return nil
	}))
	return out
}

// ageSpan is when the lost acknowledgements came, relative to the start of node.sh kill
// (negative: before it).
type ageSpan struct {
	n        int
	min, max time.Duration
	kill     time.Duration // how long node.sh kill took
}

func (a *ageSpan) add(d time.Duration) {
	if a.n == 0 || d < a.min {
		a.min = d
	}
	if a.n == 0 || d > a.max {
		a.max = d
	}
	a.n++
}

// String is empty when nothing was lost.
func (a ageSpan) String() string {
	if a.n == 0 {
		return ""
	}
	return fmt.Sprintf("; the lost ones were acknowledged from %s to %s after node.sh kill began (it took %s)",
		a.min.Round(time.Millisecond), a.max.Round(time.Millisecond), a.kill.Round(time.Millisecond))
}

func listUnapplied(ctx context.Context, t *testing.T, ctr *counters.Store, t0 time.Time) map[string]bool {
	t.Helper()
	claims, err := ctr.ListUnapplied(ctx, t0.Add(-time.Hour), time.Now().Add(time.Minute), counters.MaxListLimit)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, c := range claims {
		out[c.OpID] = true
	}
	return out
}

// forEach calls f for every index with 8 goroutines and returns the first error.
func forEach(idx []int, f func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(idx) {
					return
				}
				if err := f(idx[j]); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
