package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// DefaultLogRetention is how long a Log keeps its event rows, window index rows and late
// claims (WithLogRetention), the guard's retention: a retry of an event older than it is
// refused with ErrEventExpired.
const DefaultLogRetention = 7 * 24 * time.Hour

// Bounds of WithLogRetention.
const (
	MinLogRetention = time.Hour
	MaxLogRetention = 90 * 24 * time.Hour
)

// WithLogRetention sets how long the Log keeps what a retry is checked against: its event rows,
// its window index rows and its late claims carry a TTL of the retention plus a margin (the
// window, grace period, settle time and twice the clock skew, and a minute), so the rows of an
// event live at least as long as its retries are accepted (default 7 days, as the guard's; 1 h
// to 90 days). Record refuses an event whose Time is older than the retention with
// ErrEventExpired. Rollups must fold every window before its rows expire: the folded total, in
// the rollup row, carries no TTL and is never lost; a rollup that stalls is reported (see
// WithMaxRollupLag).
func WithLogRetention(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < MinLogRetention || d > MaxLogRetention, optcheck.Call("WithLogRetention", d), fmt.Sprintf("must be %v..%v", MinLogRetention, MaxLogRetention),
		func(c *config) { c.logRetention = d })
}

// WithMaxRollupLag sets how far behind the clock a counter's rollup may fall before it counts as
// stalled (default a quarter of the retention, 42 h with the defaults; from one minute plus the
// window, grace and settle time to half the retention, checked by NewLog). A stalled rollup is loud long before its
// windows' rows expire: Rollup returns its fold with an error matching ErrRollupStalled, and
// RunRollups and RollupEvery return one. Watch LogStats.RollupLag well below it.
func WithMaxRollupLag(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d <= 0, optcheck.Call("WithMaxRollupLag", d), "must be positive",
		func(c *config) { c.maxLag = d })
}

// WithLogger sets where a Log reports a stalled rollup (at level ERROR) and a rollup that
// failed (WARN), besides the errors it returns (default none).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// fitRetention checks the retention and the rollup lag against the window, which the options
// set in any order, and defaults the lag to a quarter of the retention.
func (c *config) fitRetention() error {
	fold := c.width + c.grace + c.settle
	if least := 4 * (fold + c.skew); c.logRetention < least {
		return optcheck.Bad(ErrInvalidOption, optcheck.Call("WithLogRetention", c.logRetention),
			"must be at least 4 x (window + grace + settle + clock skew) = %v", least)
	}
	if c.maxLag == 0 {
		c.maxLag = c.logRetention / 4
	}
	if c.maxLag < fold+time.Minute || c.maxLag > c.logRetention/2 {
		return optcheck.Bad(ErrInvalidOption, optcheck.Call("WithMaxRollupLag", c.maxLag), "must be %v..%v (half the retention)", fold+time.Minute, c.logRetention/2)
	}
	return nil
}

// rowTTL is the TTL, in seconds, of every row the Log writes: the retention and a margin that
// covers an event time up to the clock skew ahead, the time an event's window takes to settle,
// and clocks (the writer's and the node's, which counts the TTL) apart by the skew.
func (l *Log) rowTTL() int {
	c := &l.cfg
	return int((c.logRetention + c.width + c.grace + c.settle + 2*c.skew + time.Minute) / time.Second)
}

// expired reports whether an event at t is older than the retention at now: its rows, its late
// claim and the rows its claim points to may be gone, so a retry could count it again.
func (l *Log) expired(t, now time.Time) bool { return t.Before(now.Add(-l.cfg.logRetention)) }

// RollupLag is one counter's rollup lag, as a Log knows it (see LogStats).
type RollupLag struct {
	Counter string
	// Since is the oldest time the counter's rollup may not hold yet: its watermark after the
	// last fold this Log made or saw, or the first window this Log wrote to it since then.
	Since time.Time
	// Lag is the clock less Since.
	Lag time.Duration
}

// noteWrite remembers that counter has an unfolded window w, unless something earlier is
// remembered: the lag of a counter that was never folded runs from its first window.
func (l *Log) noteWrite(counter string, w time.Time) {
	if _, ok := l.behind[counter]; !ok && len(l.behind) < activeMax {
		l.behind[counter] = w
	}
}

// noteFold remembers what a fold of counter to wm leaves unfolded of what this Log knows: from
// wm on if the Log wrote a window at or after wm, else nothing. When a fold failed and nothing
// is known of the counter, the time of the failure: the lag is at least the time since.
func (l *Log) noteFold(counter string, wm time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, known := l.behind[counter]
	if !ok {
		if !known && len(l.behind) < activeMax {
			l.behind[counter] = l.cfg.Now()
		}
		return
	}
	if last, wrote := l.active[counter]; wrote && !last.Before(wm) {
		if known && old.Before(wm) {
			l.behind[counter] = wm
		}
		return
	}
	delete(l.behind, counter)
}

// forgetLag drops a counter folded past every window this Log wrote to it.
func (l *Log) forgetLag(counter string) { delete(l.behind, counter) }

// laggiest returns the counter whose rollup is furthest behind at now, if any.
func (l *Log) laggiest(now time.Time) (RollupLag, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst RollupLag
	found := false
	for c, since := range l.behind {
		if !found || since.Before(worst.Since) {
			worst, found = RollupLag{Counter: c, Since: since}, true
		}
	}
	if found {
		worst.Lag = max(now.Sub(worst.Since), 0)
	}
	return worst, found
}

// stallOf returns an error matching ErrRollupStalled when counter's rollup, as this Log knows
// it, is more than the maximum lag behind now.
func (l *Log) stallOf(counter string, now time.Time) error {
	l.mu.Lock()
	since, ok := l.behind[counter]
	l.mu.Unlock()
	if !ok {
		return nil
	}
	return l.stallSince(counter, since, now)
}

// stallSince returns an error matching ErrRollupStalled when since is more than the maximum lag
// before now.
func (l *Log) stallSince(counter string, since, now time.Time) error {
	if since.IsZero() || now.Sub(since) <= l.cfg.maxLag {
		return nil
	}
	return &RollupStalledError{Counter: counter, Since: since, Lag: now.Sub(since), MaxLag: l.cfg.maxLag,
		Expires: since.Add(l.cfg.logRetention)}
}

// report tells the Log's logger, if any, about a failed rollup.
func (l *Log) report(ctx context.Context, counter string, err error) {
	if l.cfg.logger == nil {
		return
	}
	var se *RollupStalledError
	if errors.As(err, &se) {
		l.cfg.logger.ErrorContext(ctx, "events: rollup stalled", "counter", counter, "lag", se.Lag, "max_lag", se.MaxLag,
			"rows_expire_from", se.Expires, "err", err)
		return
	}
	l.cfg.logger.WarnContext(ctx, "events: rollup failed", "counter", counter, "err", err)
}
