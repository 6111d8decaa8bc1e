package clock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// query asks the coordinator for its time: system.local is a one-row table local to the node
// that answers, so the read touches no replica and no disk beyond its memtable.
const query = "SELECT currentTimestamp() FROM system.local WHERE key = 'local'"

// Between measurements: a Check measures again when the component's clock moved this far apart
// from the monotonic clock, and no sooner than retryAfter after the last attempt, so a dead
// node or a clock stepping on every call is not asked on every Check.
const (
	slipTolerance = 100 * time.Millisecond
	retryAfter    = time.Second
)

// Meter measures one component's clock against the cluster's. Build it with New; it is safe for
// concurrent use and starts no goroutines.
type Meter struct {
	session *gocql.Session
	cfg     config
	sem     chan struct{} // one measurement at a time

	mu          sync.Mutex
	last        *sample
	attempted   time.Time // monotonic: the last measurement's start
	succeeded   time.Time // monotonic: the last successful measurement's start, kept or not
	counts      Reading   // Measurements, Failures, Refusals, Err
	logged      time.Duration
	loggedAny   bool
	refusalSaid time.Time // monotonic: the last refusal logged
}

// New returns a Meter of the clock of WithClock (time.Now by default) against the cluster of
// session. It measures nothing yet: the first Check (or Measure) does.
func New(session *gocql.Session, opts ...Option) (*Meter, error) {
	c := config{now: time.Now, interval: DefaultInterval, retry: retryAfter, threshold: DefaultThreshold, timeout: DefaultTimeout,
		logger: slog.New(slog.DiscardHandler), cons: gocql.One}
	if err := optcheck.Build(ErrInvalidOption, session == nil, "session", &c, opts); err != nil {
		return nil, err
	}
	if c.name != "" {
		c.logger = c.logger.With(slog.String("component", c.name))
	}
	return &Meter{session: session, cfg: c, sem: make(chan struct{}, 1)}, nil
}

// Measure asks the cluster for its time now, whatever the age of the last reading, and returns
// the new reading, or the error of the query (the last reading stays).
func (m *Meter) Measure(ctx context.Context) (Reading, error) {
	if err := argcheck.Call(ErrInvalidOption, "Meter", m == nil, ctx); err != nil {
		return Reading{}, err
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return m.Reading(), ctx.Err()
	}
	defer func() { <-m.sem }()
	err := m.measure(ctx)
	return m.Reading(), err
}

// measure makes one measurement; the caller holds sem.
func (m *Meter) measure(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.timeout)
	defer cancel()
	// The two clocks are read back to back, before anything that can block: a gap between them
	// (a wait for the lock, on a loaded host) would count as slip in every later bound.
	m0, l0 := time.Now(), m.cfg.now()
	m.mu.Lock()
	m.attempted = m0
	m.mu.Unlock()
	var at time.Time
	err := m.session.Query(query).WithContext(ctx).Consistency(m.cfg.cons).Idempotent(true).Scan(&at)
	m1, l1 := time.Now(), m.cfg.now()
	if err == nil && at.IsZero() {
		err = fmt.Errorf("the coordinator returned no time")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.Measurements++
	if err != nil {
		m.counts.Failures++
		m.counts.Err = fmt.Errorf("clock: measure: %w", err)
		m.cfg.logger.WarnContext(ctx, "clock: measuring the offset from the cluster's clock failed", "error", err)
		return m.counts.Err
	}
	s := newSample(at, l0, m0, l1, m1)
	m.succeeded, m.counts.Err = m0, nil
	// A slow round trip (a loaded host or node) gives a wide bound: the sample before it,
	// carried by the monotonic clock, may still be the tighter one, and is kept then.
	if m.last != nil {
		if _, _, bound, _ := m.last.at(m1, l1); bound <= s.base {
			return nil
		}
	}
	m.last = &s
	m.logMove(ctx, s.cluster.Sub(s.local), s.base)
	return nil
}

// logMove logs a measured offset that is off zero (the first) or moved from the last logged by
// more than the threshold; the caller holds mu.
func (m *Meter) logMove(ctx context.Context, offset, bound time.Duration) {
	from, first := m.logged, !m.loggedAny
	m.loggedAny = true
	if d := offset - from; d < m.cfg.threshold && -d < m.cfg.threshold {
		if first {
			m.logged = offset
		}
		return
	}
	msg := "clock: the offset from the cluster's clock moved"
	if first {
		msg = "clock: the component's clock is off the cluster's"
	}
	m.cfg.logger.WarnContext(ctx, msg, "offset", offset, "bound", bound, "previous", from)
	m.logged = offset
}

// Reading returns the last measurement extrapolated to now, without I/O.
func (m *Meter) Reading() Reading {
	if m == nil {
		return Reading{}
	}
	mono, local := time.Now(), m.cfg.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.counts
	if m.last != nil {
		_, r.Offset, r.Bound, r.Age = m.last.at(mono, local)
		r.Measured = true
	}
	return r
}

// Now returns the cluster's time: the coordinator's at the last measurement plus the monotonic
// time since. Before the first measurement it is the component's clock.
func (m *Meter) Now() time.Time {
	m.mu.Lock()
	s := m.last
	m.mu.Unlock()
	if s == nil {
		return m.cfg.now()
	}
	return s.cluster.Add(max(time.Since(s.mono), 0))
}

// Check returns the reading, measuring first when it is due: never measured, older than the
// interval, or the component's clock moved apart from the monotonic clock since. While another
// caller measures, a reading within limit is returned at once; one outside it waits for that
// measurement. A reading whose bound still exceeds limit is refused with an *OffsetError
// (ErrOffset), counted and logged.
func (m *Meter) Check(ctx context.Context, limit time.Duration) (Reading, error) {
	if err := argcheck.Call(ErrInvalidOption, "Meter", m == nil, ctx); err != nil {
		return Reading{}, err
	}
	r := m.Reading()
	usable := r.Measured && r.Bound <= limit
	switch {
	case usable && m.due():
		select {
		case m.sem <- struct{}{}:
			if m.due() { // not measured meanwhile by another caller
				_ = m.measure(ctx)
			}
			<-m.sem
		default: // another caller measures: go on with the reading
		}
	case !usable:
		select {
		case m.sem <- struct{}{}:
			m.measureUntil(ctx, limit)
			<-m.sem
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r = m.Reading()
	if r.Measured && r.Bound <= limit {
		return r, nil
	}
	return m.refuse(ctx, r, limit)
}

// tries is how many measurements in a row a Check makes while their round trips are too slow
// for its limit: one slow answer of a loaded node does not refuse a call.
const tries = 3

// measureUntil measures up to tries times while the reading stays outside limit and the
// measurements succeed, unless the last attempt was within retryAfter (another caller's, just
// now); the caller holds sem.
func (m *Meter) measureUntil(ctx context.Context, limit time.Duration) {
	m.mu.Lock()
	recent := !m.attempted.IsZero() && time.Since(m.attempted) < m.cfg.retry
	m.mu.Unlock()
	if recent {
		return
	}
	for range tries {
		if m.measure(ctx) != nil {
			return
		}
		if r := m.Reading(); r.Bound <= limit {
			return
		}
	}
}

// due reports whether a Check should measure.
func (m *Meter) due() bool {
	mono, local := time.Now(), m.cfg.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if mono.Sub(m.attempted) < m.cfg.retry && !m.attempted.IsZero() {
		return false
	}
	if m.last == nil {
		return true
	}
	_, _, bound, age := m.last.at(mono, local)
	return mono.Sub(m.succeeded) >= m.cfg.interval || bound-m.last.base > slipTolerance+time.Duration(float64(age)*MaxDrift)
}

// refuse counts and logs a refusal (at most once an interval) and returns its error.
func (m *Meter) refuse(ctx context.Context, r Reading, limit time.Duration) (Reading, error) {
	err := &OffsetError{Offset: r.Offset, Bound: r.Bound, Limit: limit, Age: r.Age, Measured: r.Measured, Err: r.Err}
	m.mu.Lock()
	m.counts.Refusals++
	r.Refusals = m.counts.Refusals
	say := m.refusalSaid.IsZero() || time.Since(m.refusalSaid) >= m.cfg.interval
	if say {
		m.refusalSaid = time.Now()
	}
	m.mu.Unlock()
	if say {
		m.cfg.logger.ErrorContext(ctx, "clock: refused: the offset from the cluster's clock is not known within the limit",
			"offset", r.Offset, "bound", r.Bound, "limit", limit, "measured", r.Measured, "error", r.Err)
	}
	return r, err
}
