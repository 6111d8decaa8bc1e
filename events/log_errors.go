package events

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the event log's retention and totals. Each is checked with errors.Is.
var (
	// ErrEventExpired is returned by Record for an event whose Time is older than the Log's
	// retention (WithLogRetention): its rows and late claim may have expired, so recording it
	// again could count it twice. It is neither counted nor dropped silently: the caller
	// decides (dead-letter it, or count it by other means).
	ErrEventExpired = errors.New("events: event older than the log's retention")
	// ErrOverflow is returned when a sum of deltas (a window's, a fold's or a total) does not fit
	// in an int64. Nothing is written: a rollup that would overflow leaves its watermark.
	ErrOverflow = errors.New("events: counter total overflows int64")
	// ErrRollupStalled is matched by a *RollupStalledError: a counter's rollup fell further
	// behind the clock than the maximum lag (WithMaxRollupLag), on its way to the retention,
	// past which unfolded events expire uncounted.
	ErrRollupStalled = errors.New("events: rollup stalled")
)

// RollupStalledError reports a counter whose rollup is further behind than the Log allows. It
// matches ErrRollupStalled.
type RollupStalledError struct {
	// Counter is the counter.
	Counter string
	// Since is the oldest time its rollup may not hold (its watermark, or its first unfolded
	// window), and Lag the clock less Since.
	Since time.Time
	Lag   time.Duration
	// MaxLag is the Log's limit (WithMaxRollupLag).
	MaxLag time.Duration
	// Expires is about when the rows of the window at Since expire (Since plus the retention):
	// events not folded by then are lost to the totals.
	Expires time.Time
}

// Error describes the error.
func (e *RollupStalledError) Error() string {
	return fmt.Sprintf("events: rollup stalled: counter %q is %v behind (limit %v); its unfolded rows expire from %v",
		e.Counter, e.Lag.Round(time.Second), e.MaxLag, e.Expires.UTC().Format(time.RFC3339))
}

// Unwrap returns ErrRollupStalled.
func (e *RollupStalledError) Unwrap() error { return ErrRollupStalled }

// addChecked returns a+b, or ErrOverflow when the sum does not fit in an int64.
func addChecked(a, b int64) (int64, error) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, fmt.Errorf("%w: %d + %d", ErrOverflow, a, b)
	}
	return s, nil
}
