package clock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// session connects to the test node; the meter needs no keyspace.
func session(t *testing.T) *gocql.Session {
	t.Helper()
	s := testnode.Connect(t, testnode.Cluster(t))
	t.Cleanup(s.Close)
	return s
}

// skewed is a component's clock set off the host's by a step the test changes.
type skewed struct{ off atomic.Int64 }

func (s *skewed) now() time.Time        { return time.Now().Add(time.Duration(s.off.Load())) }
func (s *skewed) set(off time.Duration) { s.off.Store(int64(off)) }

// The node runs on this host, so its clock is the host's: a component 150 s behind measures
// +150s, within the bound, and Now is the host's (the cluster's) time.
func TestMeasuresSkewedClock(t *testing.T) {
	t.Parallel()
	clk := &skewed{}
	clk.set(-150 * time.Second)
	m, err := New(session(t), WithClock(clk.now))
	require.NoError(t, err)
	r, err := m.Check(context.Background(), time.Second)
	require.NoError(t, err)
	assert.True(t, r.Measured)
	assert.Less(t, r.Bound, time.Second)
	assert.InDelta(t, float64(150*time.Second), float64(r.Offset), float64(r.Bound+5*time.Millisecond))
	assert.InDelta(t, float64(time.Now().UnixNano()), float64(m.Now().UnixNano()), float64(r.Bound+5*time.Millisecond))
	assert.Equal(t, int64(1), r.Measurements)

	r, err = m.Check(context.Background(), time.Second) // fresh: no second query
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Measurements)
}

// A step of the component's clock between measurements shows in the offset at once and widens
// the bound by the step, leaves Now where it was (the monotonic clock carries it), and makes
// the next Check measure again, which narrows the bound.
func TestStepShowsAndIsMeasuredAgain(t *testing.T) {
	t.Parallel()
	clk := &skewed{}
	var logs bytes.Buffer
	m, err := New(session(t), WithClock(clk.now), WithLogger(slog.New(slog.NewTextHandler(&logs, nil)), "stager"))
	require.NoError(t, err)
	m.cfg.retry = 0
	_, err = m.Measure(context.Background())
	require.NoError(t, err)
	assert.Empty(t, logs.String(), "an offset under the threshold is not logged")

	clk.set(-10 * time.Second)
	r := m.Reading()
	assert.InDelta(t, float64(10*time.Second), float64(r.Offset), float64(50*time.Millisecond))
	assert.GreaterOrEqual(t, r.Bound, 10*time.Second-50*time.Millisecond)
	assert.InDelta(t, float64(time.Now().UnixNano()), float64(m.Now().UnixNano()), float64(50*time.Millisecond))

	r, err = m.Check(context.Background(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Measurements)
	assert.Less(t, r.Bound, time.Second)
	assert.Contains(t, logs.String(), "offset from the cluster's clock moved")
	assert.Contains(t, logs.String(), "component=stager")
}

// A meter that cannot measure refuses, with the figures and the query's error, counts the
// refusal and logs it once an interval; it does not ask again within retryAfter.
func TestRefusesUnmeasured(t *testing.T) {
	t.Parallel()
	s := session(t)
	var logs bytes.Buffer
	m, err := New(s, WithLogger(slog.New(slog.NewTextHandler(&logs, nil)), "relay"))
	require.NoError(t, err)
	s.Close()
	for range 3 {
		_, err = m.Check(context.Background(), time.Second)
		require.ErrorIs(t, err, ErrOffset)
	}
	var oe *OffsetError
	require.ErrorAs(t, err, &oe)
	assert.False(t, oe.Measured)
	assert.Equal(t, time.Second, oe.Limit)
	require.ErrorIs(t, err, gocql.ErrSessionClosed)
	r := m.Reading()
	assert.Equal(t, int64(1), r.Measurements, "one query within retryAfter")
	assert.Equal(t, int64(1), r.Failures)
	assert.Equal(t, int64(3), r.Refusals)
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("clock: refused")), logs.String())
}

// A reading whose bound exceeds the caller's limit is refused; a wider limit takes it.
func TestRefusesBoundOverLimit(t *testing.T) {
	t.Parallel()
	m, err := New(session(t))
	require.NoError(t, err)
	_, err = m.Check(context.Background(), 0)
	var oe *OffsetError
	require.ErrorAs(t, err, &oe)
	assert.True(t, oe.Measured)
	assert.Positive(t, oe.Bound)
	assert.Contains(t, err.Error(), "exceeds the limit")
	_, err = m.Check(context.Background(), time.Minute)
	require.NoError(t, err)
}

// Many callers of a meter that is due measure once between them, and each gets a reading.
func TestConcurrentChecksMeasureOnce(t *testing.T) {
	t.Parallel()
	m, err := New(session(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			_, err := m.Check(context.Background(), time.Second)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, int64(1), m.Reading().Measurements)
}

// Once the interval has passed, the next Check measures again.
func TestIntervalMeasuresAgain(t *testing.T) {
	t.Parallel()
	m, err := New(session(t))
	require.NoError(t, err)
	m.cfg.retry = 0
	_, err = m.Check(context.Background(), time.Second)
	require.NoError(t, err)
	m.cfg.interval = 0
	r, err := m.Check(context.Background(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Measurements)
}

func TestSampleExtrapolates(t *testing.T) {
	t.Parallel()
	m0 := time.Now()
	l0 := m0.Add(-time.Minute).Round(0) // the component's clock: a minute behind, no monotonic reading
	at := m0.Add(4 * time.Millisecond).Round(0).Truncate(time.Millisecond)
	s := newSample(at, l0, m0, l0.Add(10*time.Millisecond), m0.Add(10*time.Millisecond))
	assert.Equal(t, 5*time.Millisecond+resolution/2, s.base)
	cluster, offset, bound, age := s.at(m0.Add(5*time.Millisecond+time.Second), l0.Add(5*time.Millisecond+time.Second))
	assert.Equal(t, time.Second, age)
	assert.Equal(t, at.Add(resolution/2+time.Second), cluster)
	assert.Equal(t, at.Add(resolution/2).Sub(l0.Add(5*time.Millisecond)), offset)
	assert.Equal(t, s.base+time.Duration(float64(time.Second)*MaxDrift), bound)
	// The component's clock stepped 3 s back: the offset grows by 3 s, the bound too.
	_, offset2, bound2, _ := s.at(m0.Add(5*time.Millisecond+time.Second), l0.Add(5*time.Millisecond+time.Second-3*time.Second))
	assert.Equal(t, offset+3*time.Second, offset2)
	assert.Equal(t, bound+3*time.Second, bound2)
}

func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	s := &gocql.Session{}
	for _, o := range []Option{WithClock(nil), WithInterval(0), WithInterval(2 * time.Hour), WithThreshold(0),
		WithTimeout(time.Millisecond), WithLogger(nil, "x"), nil} {
		_, err := New(s, o)
		assert.ErrorIs(t, err, ErrInvalidOption)
		assert.Contains(t, err.Error(), "clock: ")
	}
	_, err := New(nil)
	assert.ErrorIs(t, err, ErrInvalidOption)
	var m *Meter
	_, err = m.Check(context.Background(), time.Second)
	assert.True(t, errors.Is(err, ErrInvalidOption))
	assert.Equal(t, Reading{}, m.Reading())
}

// A measurement whose round trip was slower than the bound the last one still has is not taken:
// the tighter reading stays, and a Check that needs a tighter one than either measures again,
// up to tries times.
func TestSlowRoundTripKeepsTighterReading(t *testing.T) {
	t.Parallel()
	m, err := New(session(t))
	require.NoError(t, err)
	m.cfg.retry = 0
	_, err = m.Measure(context.Background())
	require.NoError(t, err)
	m.mu.Lock()
	tight := *m.last
	// Tighter than any round trip, even with the milliseconds of slip a loaded machine can put
	// between two reads of the clocks (a preempted goroutine), which widen its bound.
	tight.base = -50 * time.Millisecond
	m.last = &tight
	m.mu.Unlock()
	r, err := m.Measure(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Measurements)
	m.mu.Lock()
	assert.Same(t, &tight, m.last, "the tighter sample is kept")
	tight.base = 0
	m.mu.Unlock()

	_, err = m.Check(context.Background(), 0) // nothing is that tight: tries measurements, then refused
	require.ErrorIs(t, err, ErrOffset)
	assert.Equal(t, int64(2+tries), m.Reading().Measurements)
}
