package counters

import (
	"context"
	"fmt"
)

// Drift compares a counter's native value with its event-log total in shadow mode.
type Drift struct {
	// Native is the native counter's value.
	Native int64
	// Log is the event log's total, which counts every operation exactly once.
	Log int64
}

// Diff returns Native minus Log: positive when the native counter over-counted (a retried
// increment whose first attempt had applied), negative when it missed increments (a claim
// whose increment never happened). Increments in flight show as transient drift.
func (d Drift) Diff() int64 { return d.Native - d.Log }

// Drift reads both values of counter. It fails with ErrInvalidOption unless the Store was
// made WithShadow.
func (s *Store) Drift(ctx context.Context, counter string) (Drift, error) {
	if err := s.checkCall(ctx); err != nil {
		return Drift{}, err
	}
	if s.cfg.shadow == nil {
		return Drift{}, fmt.Errorf("%w: drift needs shadow mode (WithShadow)", ErrInvalidOption)
	}
	native, err := s.Value(ctx, counter)
	if err != nil {
		return Drift{}, err
	}
	total, err := s.cfg.shadow.Total(ctx, counter)
	if err != nil {
		return Drift{}, fmt.Errorf("counters: shadow total: %w", err)
	}
	return Drift{Native: native, Log: total}, nil
}
