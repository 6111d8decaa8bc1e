package events

import (
	"context"
	"time"
)

// maxClosedInTotal is how many closed windows a total sums before it folds them: a counter that
// no rollup reached for a while (one of many, a rollup pass behind) is folded by its first total,
// so the next total, in any process, reads that fold and sums only what closed since.
const maxClosedInTotal = 2

// pendingFold is a fold a total computed from what it read: the rollup row it read (st) and the
// row a fold to res.Watermark writes.
type pendingFold struct {
	st  rollupState
	res RollupResult
}

// foldOf returns the fold of the closed windows a total read, or nil when there are at most
// maxClosedInTotal of them, or first-layout buckets (Rollup folds those by their own rules).
// each holds the windows' sums, in the order of windows, read at now: a window closed at now
// (before the horizon) was summed after it settled, so its sum is the one a rollup reads. The
// fold's total is the row's total plus those sums, exactly what Rollup computes for the same
// horizon from the same row; the move is conditional on the watermark read with that total
// (the two are one mutation, and a watermark only moves forward), so it applies only if no
// fold happened since.
func (l *Log) foldOf(counter string, st rollupState, legacy []time.Time, windows []window, each []int64, now time.Time) *pendingFold {
	if len(legacy) > 0 {
		return nil
	}
	h := l.horizon(counter, now)
	total, closed := st.total, 0
	for i, w := range windows {
		if !w.start.Before(h) {
			break
		}
		var err error
		if total, err = addChecked(total, each[i]); err != nil {
			return nil // Rollup reports the overflow
		}
		closed++
	}
	if closed <= maxClosedInTotal {
		return nil
	}
	return &pendingFold{st: st, res: RollupResult{Watermark: h, Total: total, Folded: closed}}
}

// applyFold moves counter's watermark as f says, if the row still holds what the total read. A
// fold that fails or finds the row moved changes nothing: the rollups fold those windows.
func (l *Log) applyFold(ctx context.Context, counter string, f *pendingFold) {
	applied, err := l.moveWatermark(ctx, counter, f.st, f.res)
	if err != nil || !applied {
		return
	}
	l.stats.totalFolds.Add(1)
	l.raiseFloor(counter, f.res.Watermark)
	l.noteFold(counter, f.res.Watermark, true)
}
