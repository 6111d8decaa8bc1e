package guard

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
)

// A guard judges time in many places: the by-scope index places an id in the window of the
// time it was processed, an owner's warm-up reads the windows of its horizon back from now, the
// fast path vouches for a message by how old its time is, a layout change takes effect from a
// time ahead, a message too far ahead is refused. Each is safe while the guards' clocks agree
// within lwt.MaxClockSkew: a guard 5 minutes behind indexed ids in windows that the next
// owner's warm-up did not read, and that owner ran their copies again on the fast path. So a
// guard judges time by the cluster's clock, known as its own plus the offset a clock.Meter
// measured against a coordinator's, and refuses (ErrClockOffset) while that offset is not
// known within clockLimit.

// clockLimit is the widest bound a guard's offset may have: two guards then misjudge the
// cluster's time by half lwt.MaxClockSkew at most between them, and the other half is left for
// the producers' clocks that stamp message times.
const clockLimit = lwt.MaxClockSkew / 4

// measureClock makes the config judge time by the cluster's clock, measured through session
// against the guard's (WithClock), unless WithoutClockCheck; it returns the meter (nil then).
// It runs before the stores are made, so that they are given the cluster's clock too.
func (c *config) measureClock(session *gocql.Session) (*clock.Meter, error) {
	if c.unchecked {
		return nil, nil
	}
	logger := c.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := clock.New(session, clock.WithClock(c.Now), clock.WithLogger(logger, "guard"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	c.Now = m.Now
	return m, nil
}

// checkClock measures the guard's offset when it is due (once a minute: one query, made by the
// call that finds it due) and refuses one not known within clockLimit, before anything is
// judged by the time. A fresh reading costs no I/O.
func (g *Guard) checkClock(ctx context.Context) error {
	if g.clock == nil {
		return nil
	}
	if _, err := g.clock.Check(ctx, clockLimit); err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	return nil
}

// Clock returns what the guard knows of its clock: its offset from the cluster's, the bound, the
// measurement's age, and the calls refused (ErrClockOffset). Zero under WithoutClockCheck.
// promobs.NewClockCollector and otelobs.ObserveClock export it.
func (g *Guard) Clock() clock.Reading {
	if g == nil {
		return clock.Reading{}
	}
	return g.clock.Reading()
}

// WithoutClockCheck judges time by the clock of WithClock alone: nothing measures its offset
// from the cluster's, nothing corrects by it, nothing refuses. It is for tests that simulate
// history with a fake clock; guards built with it must keep their clocks within
// lwt.MaxClockSkew of each other's, and nothing at run time detects when they do not. Default:
// measured (docs/guard.md, "Time").
func WithoutClockCheck() Option {
	return optcheck.Set(ErrInvalidOption, false, "WithoutClockCheck()", "", func(c *config) { c.unchecked = true })
}

// WithLogger sets the logger of the guard's clock: an offset found or moved is logged at Warn, a
// refusal (ErrClockOffset) at Error, at most once a minute. Default none.
func WithLogger(l *slog.Logger) Option {
	return optcheck.Set(ErrInvalidOption, l == nil, "WithLogger(nil)", "no logger", func(c *config) { c.logger = l })
}
