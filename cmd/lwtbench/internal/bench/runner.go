package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Phase modes.
const (
	ModeWarmup = "warmup" // closed loop, results discarded
	ModeClosed = "closed"
	ModeOpen   = "open"
)

// phasePlan is one phase of a run.
type phasePlan struct {
	mode     string
	workers  int
	rate     float64 // open loop only: requests per second, all operations together
	duration time.Duration
}

// label names the phase in the progress display.
func (p phasePlan) label() string {
	switch p.mode {
	case ModeOpen:
		return fmt.Sprintf("open loop %g/s", p.rate)
	case ModeWarmup:
		return fmt.Sprintf("warm-up c=%d", p.workers)
	}
	return fmt.Sprintf("closed loop c=%d", p.workers)
}

// PhaseResult is what one measured phase recorded.
type PhaseResult struct {
	Name        string    `json:"name,omitempty"` // a -hot-counter case
	Mode        string    `json:"mode"`           // "closed" or "open"
	Workers     int       `json:"workers"`
	RatePerS    float64   `json:"rate_per_s,omitempty"` // open loop: the intended total rate
	DurationS   float64   `json:"duration_s"`           // planned
	ElapsedS    float64   `json:"elapsed_s"`            // from the first request to the last answer
	Throughput  float64   `json:"throughput_per_s"`     // successful requests per second, all ops
	Operations  []Summary `json:"operations"`
	LatencyFrom string    `json:"latency_from"` // "send" (service time) or "intended start"
}

// Label names the phase in the table and the chart.
func (p PhaseResult) Label() string {
	if p.Name != "" {
		return p.Name
	}
	if p.Mode == ModeOpen {
		return fmt.Sprintf("open loop, %g req/s, %d workers", p.RatePerS, p.Workers)
	}
	return fmt.Sprintf("closed loop, concurrency %d", p.Workers)
}

// live holds counters the progress display reads while workers run.
type live struct {
	done   atomic.Int64
	failed atomic.Int64
	phase  atomic.Pointer[string]
}

// runner runs phases over a fixed set of operations. Each worker owns one opStats per operation,
// reused across phases, so recording needs no lock.
type runner struct {
	ops   []Operation
	stats [][]*opStats // [worker][op]
	live  *live
	// openDrain bounds how long an open-loop phase may run past its end to send requests that
	// fell behind schedule; what is still unsent then is counted, not dropped silently.
	openDrain time.Duration
}

func newRunner(ops []Operation, maxWorkers int, lv *live, openDrain time.Duration) *runner {
	stats := make([][]*opStats, maxWorkers)
	for w := range stats {
		stats[w] = make([]*opStats, len(ops))
		for i := range ops {
			stats[w][i] = newOpStats()
		}
	}
	return &runner{ops: ops, stats: stats, live: lv, openDrain: openDrain}
}

// cycler gives a worker its operations: every operation once per cycle, in an order shuffled
// anew each cycle, so no operation always follows another and counts stay within one.
type cycler struct {
	rng   *rand.Rand
	order []int
	pos   int
	seq   []int // next Request.Seq per operation
}

func newCycler(nops int, seed uint64) *cycler {
	c := &cycler{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), order: make([]int, nops), seq: make([]int, nops)}
	for i := range c.order {
		c.order[i] = i
	}
	c.pos = nops
	return c
}

// next returns the next operation's index and its request number.
func (c *cycler) next() (op, seq int) {
	if c.pos == len(c.order) {
		c.rng.Shuffle(len(c.order), func(i, j int) { c.order[i], c.order[j] = c.order[j], c.order[i] })
		c.pos = 0
	}
	op = c.order[c.pos]
	c.pos++
	seq = c.seq[op]
	c.seq[op]++
	return op, seq
}

// run executes one phase and returns its merged result. It returns ctx.Err() if ctx ends first.
func (r *runner) run(ctx context.Context, index int, p phasePlan) (PhaseResult, error) {
	label := p.label()
	r.live.phase.Store(&label)
	for w := range p.workers {
		for _, s := range r.stats[w] {
			s.reset()
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range p.workers {
		cyc := newCycler(len(r.ops), uint64(index)<<32|uint64(w))
		wg.Go(func() {
			if p.mode == ModeOpen {
				r.openWorker(ctx, index, w, cyc, newOpenSchedule(start, p.rate, p.duration, p.workers, w))
			} else {
				r.closedWorker(ctx, index, w, cyc, start.Add(p.duration))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return PhaseResult{}, err
	}
	return r.merge(p, elapsed), nil
}

func (r *runner) closedWorker(ctx context.Context, phase, w int, cyc *cycler, end time.Time) {
	for ctx.Err() == nil && time.Now().Before(end) {
		op, seq := cyc.next()
		t0 := time.Now()
		err := r.ops[op].Do(ctx, Request{Phase: phase, Worker: w, Seq: seq})
		r.record(ctx, w, op, time.Since(t0), err)
	}
}

func (r *runner) openWorker(ctx context.Context, phase, w int, cyc *cycler, s openSchedule) {
	hardStop := s.intended(s.count).Add(r.openDrain)
	timer := time.NewTimer(time.Hour)
	timer.Stop() // since Go 1.23 a stopped timer can be Reset without draining
	defer timer.Stop()
	for k := range s.count {
		due := s.intended(k)
		if !s.await(ctx, k, timer) {
			return
		}
		op, seq := cyc.next()
		if time.Now().After(hardStop) {
			// Count every remaining request against the operation it would have run.
			r.stats[w][op].unsent++
			for range s.count - k - 1 {
				op, _ := cyc.next()
				r.stats[w][op].unsent++
			}
			return
		}
		err := r.ops[op].Do(ctx, Request{Phase: phase, Worker: w, Seq: seq})
		r.record(ctx, w, op, time.Since(due), err)
		if ctx.Err() != nil {
			return
		}
	}
}

func (r *runner) record(ctx context.Context, w, op int, latency time.Duration, err error) {
	if ctx.Err() != nil {
		return // interrupted by the user: the request says nothing about the cluster
	}
	r.stats[w][op].record(latency, err)
	r.live.done.Add(1)
	if err != nil {
		r.live.failed.Add(1)
	}
}

// messageRate is the messages per second an operation moved. In a closed loop the workers take
// the operations in turn, so every operation gets the same share of requests and req/s says
// nothing about one operation's speed; its rate is the messages it moved per second of the
// workers' time spent on it (workers x messages per request / mean latency): what it sustains
// alone at this concurrency. In an open loop it is the scheduled rate it kept.
func messageRate(p phasePlan, s Summary) float64 {
	if p.mode == ModeOpen || s.MeanMs == 0 {
		return s.Throughput * float64(s.PerRequest)
	}
	return float64(p.workers) * float64(s.PerRequest) / (s.MeanMs / 1000)
}

func (r *runner) merge(p phasePlan, elapsed time.Duration) PhaseResult {
	res := PhaseResult{
		Mode: p.mode, Workers: p.workers, DurationS: p.duration.Seconds(), ElapsedS: elapsed.Seconds(),
		LatencyFrom: "send",
	}
	if p.mode == ModeOpen {
		res.RatePerS = p.rate
		res.LatencyFrom = "intended start"
	}
	for i, op := range r.ops {
		total := newOpStats()
		for w := range p.workers {
			total.merge(r.stats[w][i])
		}
		sum := summarize(op.Name(), total, elapsed)
		sum.PerRequest = 1
		if b, ok := op.(Batched); ok {
			sum.PerRequest = b.PerRequest()
		}
		sum.MessagesPerS = messageRate(p, sum)
		res.Throughput += sum.Throughput
		res.Operations = append(res.Operations, sum)
	}
	setRatios(res.Operations, Baseline)
	return res
}
