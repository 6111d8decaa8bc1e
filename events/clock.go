package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Writers decide by the time whether a window is open (an on-time write) or closed (the late
// path), and rollups whether it has settled (folded for good): a writer whose clock ran behind
// a rollup's wrote on time into windows the rollup had folded, and those events were never
// counted. So both judge windows by the cluster's clock, known as their own plus the offset a
// clock.Meter measured against a coordinator's, and refuse (ErrClockOffset) while that offset
// is not known within clockLimit.

// measureClock makes the config judge time by the cluster's clock, measured through session
// against the Log's clock (WithClock), unless WithoutClockCheck; it returns the meter (nil
// then).
func (c *config) measureClock(session *gocql.Session) (*clock.Meter, error) {
	if c.unchecked {
		return nil, nil
	}
	opts := []clock.Option{clock.WithClock(c.Now)}
	if c.logger != nil {
		opts = append(opts, clock.WithLogger(c.logger, "event log"))
	}
	m, err := clock.New(session, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	c.Now = m.Now
	return m, nil
}

// clockLimit is the widest bound a writer's or rollup's offset may have: half the settle time
// is the clocks' allowance between writers and rollups (WithSettleTime), a quarter each.
func (c config) clockLimit() time.Duration { return c.settle / 4 }

// checkClock measures the Log's offset when it is due and refuses one not known within
// clockLimit, before a window is judged open, closed or settled.
func (l *Log) checkClock(ctx context.Context) error {
	if l.clock == nil {
		return nil
	}
	if _, err := l.clock.Check(ctx, l.cfg.clockLimit()); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	return nil
}

// checked is check(e) by the cluster's time: an event refused as ahead of a clock never
// measured is checked again once the offset is known, so a Log whose clock is behind the
// cluster's by more than WithMaxClockSkew does not refuse the events before its first
// measurement (nor, by never measuring, all of them). Other refusals need no I/O: bad input
// is refused before the clock is asked.
func (l *Log) checked(ctx context.Context, e Event) error {
	err := l.check(e)
	if errors.Is(err, ErrFutureEvent) && l.clock != nil && !l.clock.Reading().Measured {
		if cerr := l.checkClock(ctx); cerr != nil {
			return cerr
		}
		return l.check(e)
	}
	return err
}

// Clock returns what the Log knows of its clock: its offset from the cluster's, the bound, the
// measurement's age, and the calls refused (ErrClockOffset). Zero under WithoutClockCheck.
func (l *Log) Clock() clock.Reading {
	if l == nil {
		return clock.Reading{}
	}
	return l.clock.Reading()
}
