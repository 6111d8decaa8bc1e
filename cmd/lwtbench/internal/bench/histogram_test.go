package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// within asserts got is within the histogram's 1% precision of want.
func within(t *testing.T, want, got float64, what string) {
	t.Helper()
	assert.InEpsilon(t, want, got, 0.01, "%s: want %g, got %g", what, want, got)
}

func TestOpStatsPercentilesOfKnownValues(t *testing.T) {
	s := newOpStats()
	for i := 1; i <= 1000; i++ { // 1 ms .. 1000 ms, once each
		s.record(time.Duration(i)*time.Millisecond, nil)
	}
	sum := summarize("x", s, 10*time.Second)
	assert.Equal(t, int64(1000), sum.Requests)
	within(t, 500, sum.P50Ms, "p50")
	within(t, 900, sum.P90Ms, "p90")
	within(t, 990, sum.P99Ms, "p99")
	within(t, 999, sum.P999Ms, "p99.9")
	within(t, 1000, sum.MaxMs, "max")
	within(t, 500.5, sum.MeanMs, "mean")
	assert.InDelta(t, 100, sum.Throughput, 1e-9)
}

func TestMergeOfWorkersEqualsOneRecorder(t *testing.T) {
	one := newOpStats()
	workers := []*opStats{newOpStats(), newOpStats(), newOpStats(), newOpStats()}
	for i := range 20000 {
		// A skewed distribution: most fast, a long tail, spread unevenly over workers.
		lat := time.Duration(200+i%997*(1+i%7)) * time.Microsecond
		if i%1000 == 0 {
			lat = time.Duration(i) * time.Millisecond / 100
		}
		one.record(lat, nil)
		workers[(i*i)%len(workers)].record(lat, nil)
	}
	merged := newOpStats()
	for _, w := range workers {
		merged.merge(w)
	}
	a, b := summarize("x", one, time.Second), summarize("x", merged, time.Second)
	assert.Equal(t, a, b)
	assert.Equal(t, int64(20000), b.Requests)
}

func TestRecordCountsFailuresApart(t *testing.T) {
	s := newOpStats()
	s.record(time.Millisecond, nil)
	s.record(time.Second, fmt.Errorf("first: %w", &gocql.RequestErrWriteTimeout{WriteType: "CAS"}))
	s.record(time.Second, fmt.Errorf("exec: %w", gocql.ErrTimeoutNoResponse))
	s.record(time.Second, context.DeadlineExceeded)
	s.record(time.Millisecond, errors.New("boom"))
	s.record(time.Millisecond, fmt.Errorf("%w: applied", errUnexpectedOutcome))

	other := newOpStats()
	other.record(time.Millisecond, errors.New("later"))
	s.merge(other)

	sum := summarize("x", s, time.Second)
	assert.Equal(t, int64(1), sum.Requests, "failures stay out of the percentiles")
	assert.Equal(t, int64(3), sum.Timeouts)
	assert.Equal(t, int64(3), sum.Errors)
	assert.Contains(t, sum.FirstError, "first:", "the first failure is kept, whatever its kind")
	within(t, 1, sum.MaxMs, "max of successes")
}

func TestRecordClampsBeyondRange(t *testing.T) {
	s := newOpStats()
	s.record(2*time.Minute, nil)
	s.record(0, nil)
	sum := summarize("x", s, time.Second)
	assert.Equal(t, int64(2), sum.Requests)
	assert.Equal(t, int64(1), sum.Clamped)
	within(t, 60000, sum.MaxMs, "clamped max")
}

func TestResetKeepsNothing(t *testing.T) {
	s := newOpStats()
	s.record(time.Millisecond, errors.New("x"))
	s.record(time.Millisecond, nil)
	s.unsent = 3
	s.reset()
	assert.Equal(t, Summary{Op: "x"}, summarize("x", s, 0))
}

func TestSetRatios(t *testing.T) {
	sums := []Summary{
		{Op: "lwt-new", Requests: 5, P50Ms: 3, P99Ms: 12},
		{Op: Baseline, Requests: 5, P50Ms: 1.5, P99Ms: 4},
		{Op: "failing", Requests: 0},
	}
	setRatios(sums, Baseline)
	assert.InDelta(t, 2.0, sums[0].RatioP50, 1e-12)
	assert.InDelta(t, 3.0, sums[0].RatioP99, 1e-12)
	assert.InDelta(t, 1.0, sums[1].RatioP50, 1e-12)
	assert.Zero(t, sums[2].RatioP50)

	noBase := []Summary{{Op: "lwt-new", Requests: 5, P50Ms: 3, P99Ms: 12}}
	setRatios(noBase, Baseline)
	assert.Zero(t, noBase[0].RatioP50, "no baseline, no ratio")
	require.Len(t, noBase, 1)
}
