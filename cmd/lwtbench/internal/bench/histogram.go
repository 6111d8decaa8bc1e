package bench

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 60 s. Two significant digits keep every
// value within 1% (finer than run-to-run noise) at 20 KB per histogram; three would cost 140 KB,
// and there is one histogram per worker and operation.
const (
	histLowest  = 1
	histHighest = int64(time.Minute / time.Microsecond)
	histSigFigs = 2
)

// opStats is what one worker (or, after merging, a whole phase) recorded for one operation.
// It is not safe for concurrent use: each worker owns its own.
type opStats struct {
	hist     *hdr.Histogram // successful requests only; failures are counted below
	errors   int64
	timeouts int64
	clamped  int64 // successes slower than histHighest, recorded as histHighest
	unsent   int64 // open loop: requests scheduled but never sent because the phase ran out
	firstErr string
}

func newOpStats() *opStats { return &opStats{hist: hdr.New(histLowest, histHighest, histSigFigs)} }

// record adds one request's latency and outcome.
func (s *opStats) record(latency time.Duration, err error) {
	switch classify(err) {
	case outcomeTimeout:
		s.timeouts++
	case outcomeError:
		s.errors++
	default:
		us := max(latency.Microseconds(), histLowest)
		if us > histHighest {
			us = histHighest
			s.clamped++
		}
		_ = s.hist.RecordValue(us) // cannot fail: us is within the histogram's range
		return
	}
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
}

// reset empties s for the next phase, keeping its histogram's memory.
func (s *opStats) reset() {
	s.hist.Reset()
	*s = opStats{hist: s.hist}
}

// merge adds o into s. Both histograms share one range, so nothing is dropped.
func (s *opStats) merge(o *opStats) {
	s.hist.Merge(o.hist)
	s.errors += o.errors
	s.timeouts += o.timeouts
	s.clamped += o.clamped
	s.unsent += o.unsent
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
}

// Summary is one operation's result in one phase. Latencies are in milliseconds.
type Summary struct {
	Op         string  `json:"op"`
	Requests   int64   `json:"requests"` // successful requests: the ones in the percentiles
	Errors     int64   `json:"errors"`
	Timeouts   int64   `json:"timeouts"`
	Unsent     int64   `json:"unsent,omitempty"`  // open loop: scheduled but not sent in time
	Clamped    int64   `json:"clamped,omitempty"` // successes slower than 60 s, counted as 60 s
	Throughput float64 `json:"throughput_per_s"`  // successful requests per second
	// PerRequest is the messages one request carries (a batched operation), 1 otherwise;
	// MessagesPerS is the messages per second the operation moved (see messageRate).
	PerRequest   int     `json:"per_request,omitempty"`
	MessagesPerS float64 `json:"messages_per_s,omitempty"`
	MeanMs       float64 `json:"mean_ms"`
	P50Ms        float64 `json:"p50_ms"`
	P90Ms        float64 `json:"p90_ms"`
	P99Ms        float64 `json:"p99_ms"`
	P999Ms       float64 `json:"p99_9_ms"`
	MaxMs        float64 `json:"max_ms"`
	RatioP50     float64 `json:"ratio_p50,omitempty"` // P50Ms over the baseline's, same phase
	RatioP99     float64 `json:"ratio_p99,omitempty"`
	FirstError   string  `json:"first_error,omitempty"`
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

// summarize turns merged stats into a Summary; elapsed is the phase's measured duration.
func summarize(op string, s *opStats, elapsed time.Duration) Summary {
	out := Summary{
		Op: op, Requests: s.hist.TotalCount(), Errors: s.errors, Timeouts: s.timeouts,
		Unsent: s.unsent, Clamped: s.clamped, FirstError: s.firstErr,
	}
	if elapsed > 0 {
		out.Throughput = float64(out.Requests) / elapsed.Seconds()
	}
	if out.Requests > 0 {
		out.MeanMs = s.hist.Mean() / 1000
		out.P50Ms = usToMs(s.hist.ValueAtQuantile(50))
		out.P90Ms = usToMs(s.hist.ValueAtQuantile(90))
		out.P99Ms = usToMs(s.hist.ValueAtQuantile(99))
		out.P999Ms = usToMs(s.hist.ValueAtQuantile(99.9))
		out.MaxMs = usToMs(s.hist.Max())
	}
	return out
}

// setRatios fills every summary's ratios to the baseline operation's p50 and p99; they stay
// zero (absent from the JSON) when the baseline was not run or recorded nothing.
func setRatios(sums []Summary, baseline string) {
	var base *Summary
	for i := range sums {
		if sums[i].Op == baseline {
			base = &sums[i]
		}
	}
	if base == nil || base.Requests == 0 || base.P50Ms == 0 || base.P99Ms == 0 {
		return
	}
	for i := range sums {
		if sums[i].Requests == 0 {
			continue
		}
		sums[i].RatioP50 = sums[i].P50Ms / base.P50Ms
		sums[i].RatioP99 = sums[i].P99Ms / base.P99Ms
	}
}
