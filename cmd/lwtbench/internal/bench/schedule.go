package bench

import (
	"context"
	"math"
	"time"
)

// openSchedule is one worker's share of an open-loop phase. The phase issues rate requests per
// second in total, evenly spaced; request i of the phase (i = 0, 1, ...) is due at i/rate after
// the start, and worker w of n takes requests w, w+n, w+2n, ... So the workers together keep the
// exact rate, and a worker that falls behind shows its backlog as latency.
type openSchedule struct {
	start   time.Time
	rate    float64 // requests per second, all workers together
	workers int
	worker  int
	count   int // this worker's requests due before the end of the phase
}

// totalOpenRequests is how many requests an open-loop phase schedules: those due strictly
// before its end.
func totalOpenRequests(rate float64, d time.Duration) int {
	return int(math.Ceil(rate * d.Seconds()))
}

// newOpenSchedule plans worker's share of a phase of duration d.
func newOpenSchedule(start time.Time, rate float64, d time.Duration, workers, worker int) openSchedule {
	total := totalOpenRequests(rate, d)
	count := 0
	if worker < total {
		count = (total - worker + workers - 1) / workers
	}
	return openSchedule{start: start, rate: rate, workers: workers, worker: worker, count: count}
}

// intended returns when this worker's k-th request is due. Latency is measured from this
// instant, not from when the request was sent.
func (s openSchedule) intended(k int) time.Time {
	i := s.worker + k*s.workers
	return s.start.Add(time.Duration(float64(i) / s.rate * float64(time.Second)))
}

// await waits, on timer (stopped, or fired and drained), until request k is due, and reports
// whether ctx is still live. A worker behind its schedule does not wait.
func (s openSchedule) await(ctx context.Context, k int, timer *time.Timer) bool {
	wait := time.Until(s.intended(k))
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer.Reset(wait)
	select {
	case <-ctx.Done():
		timer.Stop()
		return false
	case <-timer.C:
		return true
	}
}
