package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// errClockOff marks a host whose clock is further off the cluster's than the operator's limit:
// exit status 3, like a stalled rollup, so a check can tell it from a failure.
var errClockOff = errors.New("clock off")

var clockOffsetCommand = &command{
	name:    "clock offset",
	summary: "measure this host's clock against the cluster's (the coordinator's time, half the round trip as the bound), as stagers and relays do; exit 3 when further off than -max-offset",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		n := fs.Int("n", 5, "measurements to make, one after the other (1 to 100); the one with the smallest bound decides")
		maxOffset := fs.Duration("max-offset", time.Second, "exit 3 when the offset may be further than this from zero")
		return func(ctx context.Context, e *env, _ []string) error {
			if *n < 1 || *n > 100 || *maxOffset <= 0 {
				return fmt.Errorf("%w: -n must be 1..100 and -max-offset positive", errUsage)
			}
			return clockOffset(ctx, e, *n, *maxOffset)
		}
	},
}

// clockView is one measurement as clock offset prints it.
type clockView struct {
	Offset float64 `json:"offset_seconds"` // the cluster's clock minus this host's
	Bound  float64 `json:"bound_seconds"`
}

// clockOffset measures n times and prints each measurement and the best (the smallest bound),
// failing with errClockOff when the best may be further off than maxOffset.
func clockOffset(ctx context.Context, e *env, n int, maxOffset time.Duration) error {
	m, err := clock.New(e.session)
	if err != nil {
		return err
	}
	var all []clockView
	var best clock.Reading
	for i := 0; i < n; i++ {
		r, err := m.Measure(ctx)
		if err != nil {
			return err
		}
		all = append(all, clockView{Offset: r.Offset.Seconds(), Bound: r.Bound.Seconds()})
		if i == 0 || r.Bound < best.Bound {
			best = r
		}
	}
	worst := max((best.Offset + best.Bound).Abs(), (best.Offset - best.Bound).Abs())
	off := worst > maxOffset
	state := "ok"
	if off {
		state = fmt.Sprintf("OFF: may be %v from the cluster's clock, past -max-offset %v", worst.Round(time.Millisecond), maxOffset)
	}
	err = e.emit(map[string]any{"offset_seconds": best.Offset.Seconds(), "bound_seconds": best.Bound.Seconds(),
		"max_offset_seconds": maxOffset.Seconds(), "off": off, "measurements": all},
		func(w io.Writer) {
			row(w, "OFFSET (CLUSTER - HOST)", "BOUND", "MEASUREMENTS", "STATE")
			row(w, best.Offset.Round(time.Microsecond), "±"+best.Bound.Round(time.Microsecond).String(), n, state)
		})
	if err == nil && off {
		err = fmt.Errorf("%w: this host's clock is %v ±%v off the cluster's (limit %v): see \"a clock off the cluster's\" (docs/operating.md)",
			errClockOff, best.Offset.Round(time.Millisecond), best.Bound.Round(time.Millisecond), maxOffset)
	}
	return err
}
