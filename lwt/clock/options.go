package clock

import (
	"log/slog"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// Defaults of the options.
const (
	// DefaultInterval is how old a reading may be before Check measures again.
	DefaultInterval = time.Minute
	// DefaultThreshold is how far the offset may move (from zero at the first measurement, from
	// the last one logged after it) before it is logged at Warn.
	DefaultThreshold = time.Second
	// DefaultTimeout bounds one measurement's query when the caller's ctx allows longer.
	DefaultTimeout = 5 * time.Second
)

// MaxDrift is the rate at which a reading's bound widens with its age: the monotonic clock
// that extrapolates it may run off by up to this fraction (NTP slews a clock by at most 500 ppm).
const MaxDrift = 500e-6

// Option configures a Meter. A bad one makes New fail with an error that names it and matches
// ErrInvalidOption.
type Option func(*config) error

type config struct {
	now       func() time.Time
	interval  time.Duration
	threshold time.Duration
	timeout   time.Duration
	logger    *slog.Logger
	name      string
	cons      gocql.Consistency
	retry     time.Duration // retryAfter; tests set 0
}

func set(bad bool, call, why string, apply func(*config)) Option {
	return optcheck.Set(ErrInvalidOption, bad, call, why, apply)
}

// WithClock sets the component's clock, the one whose offset is measured: pass the clock the
// component judges time by (its own WithClock). Default time.Now.
func WithClock(now func() time.Time) Option {
	return set(now == nil, "WithClock(nil)", "no clock", func(c *config) { c.now = now })
}

// WithInterval sets how old a reading may be before Check measures again. Default 1m; 1s to 1h.
func WithInterval(d time.Duration) Option {
	return set(d < time.Second || d > time.Hour, optcheck.Call("WithInterval", d), "must be 1s..1h",
		func(c *config) { c.interval = d })
}

// WithThreshold sets how far the offset may move before the move is logged at Warn. Default 1s;
// at least 1ms.
func WithThreshold(d time.Duration) Option {
	return set(d < time.Millisecond, optcheck.Call("WithThreshold", d), "must be at least 1ms",
		func(c *config) { c.threshold = d })
}

// WithTimeout bounds one measurement's query. Default 5s; 10ms to 1m.
func WithTimeout(d time.Duration) Option {
	return set(d < 10*time.Millisecond || d > time.Minute, optcheck.Call("WithTimeout", d), "must be 10ms..1m",
		func(c *config) { c.timeout = d })
}

// WithLogger sets the logger of moves of the offset, failed measurements and refusals, each
// with the attribute component=name. Default none.
func WithLogger(l *slog.Logger, name string) Option {
	return set(l == nil, optcheck.Call("WithLogger", nil, name), "no logger",
		func(c *config) { c.logger, c.name = l, name })
}
