package events

import (
	"context"
	"time"

	"github.com/cassdedup/cassdedup/internal/parallel"
)

// floorsCacheSize bounds the watermarks a Log remembers for tail. Forgetting one costs a
// total one round, never correctness.
const floorsCacheSize = 1 << 16

// tail reads the counter's rollup row and lists what it does not hold before end: the first
// layout's buckets and the windows from its watermark on.
//
// A watermark only moves forward (every move is an LWT conditional on the one it replaces,
// towards a later horizon), so one this Log saw earlier is a floor under the row's current
// one. With a floor, the row and the index slices from the floor on are read in one round, and
// what the row turns out to hold is dropped from the lists; the lists are then exactly those
// read from the row's own watermark, as a read in two rounds would list them. Without a floor,
// or when the row holds less than the floor (a row rewritten by hand), it reads the row first.
func (l *Log) tail(ctx context.Context, counter string, end time.Time) (rollupState, []time.Time, []window, error) {
	floor, ok := l.floor(counter)
	if !ok {
		return l.tailFromRow(ctx, counter, end)
	}
	var (
		st      rollupState
		legacy  []time.Time
		windows []window
	)
	err := parallel.ForEach(ctx, 3, 3, func(ctx context.Context, i int) error {
		var err error
		switch i {
		case 0:
			st, err = l.readRollup(ctx, counter, false)
		case 1:
			legacy, err = l.listLegacy(ctx, counter, floor.Add(-l.cfg.legacyWidth), end)
		default:
			windows, err = l.listWindows(ctx, counter, floor, end)
		}
		return err
	})
	if err != nil {
		return rollupState{}, nil, nil, err
	}
	if !st.marked || st.watermark.Before(floor) {
		l.forgetFloor(counter)
		return l.tailFromRow(ctx, counter, end)
	}
	l.raiseFloor(counter, st.watermark)
	after := l.legacyAfter(st)
	for len(legacy) > 0 && !legacy[0].After(after) {
		legacy = legacy[1:]
	}
	for len(windows) > 0 && windows[0].start.Before(st.watermark) {
		windows = windows[1:]
	}
	return st, legacy, windows, nil
}

// tailFromRow reads the rollup row, then lists from its watermark: two rounds.
func (l *Log) tailFromRow(ctx context.Context, counter string, end time.Time) (rollupState, []time.Time, []window, error) {
	st, err := l.readRollup(ctx, counter, false)
	if err != nil {
		return rollupState{}, nil, nil, err
	}
	if st.marked {
		l.raiseFloor(counter, st.watermark)
	}
	legacy, windows, err := l.listTail(ctx, counter, st, end)
	return st, legacy, windows, err
}

// floor returns the latest watermark this Log saw for counter, if it remembers one.
func (l *Log) floor(counter string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	wm, ok := l.floors[counter]
	return wm, ok
}

// raiseFloor remembers wm as counter's floor unless a later one is known.
func (l *Log) raiseFloor(counter string, wm time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.floors[counter]; ok && !old.Before(wm) {
		return
	}
	if len(l.floors) >= floorsCacheSize {
		clear(l.floors)
	}
	l.floors[counter] = wm
}

// forgetFloor drops counter's floor: its row held less than it.
func (l *Log) forgetFloor(counter string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.floors, counter)
}
