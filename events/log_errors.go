package events

import (
	"fmt"
	"time"
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
