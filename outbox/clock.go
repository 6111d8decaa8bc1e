package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// A stager buckets an intent by its time, and a relay closes buckets and reads arrivals by its
// own: with each on its own clock, a stager 150 s behind its relay wrote every intent into a
// bucket the relay had closed, and nothing was published or refused. So both judge time by the
// cluster's clock, known as their own plus the offset a clock.Meter measured against a
// coordinator's, and refuse (ErrClockOffset) while that offset is not known within
// clockLimit.

// measureClock makes the config judge time by the cluster's clock, measured through session
// against the component's (WithClock), unless WithoutClockCheck. component names it in logs.
func (c *config) measureClock(session *gocql.Session, component string) error {
	c.local = c.now
	if c.unchecked {
		return nil
	}
	m, err := clock.New(session, clock.WithClock(c.local), clock.WithLogger(c.logger, component))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	c.meter, c.now = m, m.Now
	return nil
}

// clockLimit is the widest bound a stager's or relay's offset may have: the two together then
// misjudge time by at most a quarter of the horizon, and the other quarter of the half that
// clocks are allowed (WithHorizon) is left for the extrapolation between checks.
func (c config) clockLimit() time.Duration { return c.horizon / 8 }

// checkClock measures the offset when it is due and refuses one not known within clockLimit,
// before anything is judged by the time; it returns the reading (zero under WithoutClockCheck).
func (c config) checkClock(ctx context.Context) (clock.Reading, error) {
	if c.meter == nil {
		return clock.Reading{}, nil
	}
	r, err := c.meter.Check(ctx, c.clockLimit())
	if err != nil {
		return r, fmt.Errorf("outbox: %w", err)
	}
	return r, nil
}

// toCluster converts t, an instant of the component's clock (a claim's expiry, computed by
// the lwt.Store on that clock), to the cluster's.
func (c config) toCluster(t time.Time) time.Time {
	if c.meter == nil {
		return t
	}
	return t.Add(c.meter.Reading().Offset)
}

// clockReading is the meter's reading, zero under WithoutClockCheck.
func (c config) clockReading() clock.Reading { return c.meter.Reading() }
