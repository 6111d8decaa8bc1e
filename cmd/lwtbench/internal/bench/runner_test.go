package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeOp is an in-memory operation: do decides each request's fate.
type fakeOp struct {
	name  string
	do    func(req Request) error
	calls atomic.Int64
	mu    sync.Mutex
	keys  map[string]bool
	dupes int
}

func newFakeOp(name string, do func(Request) error) *fakeOp {
	return &fakeOp{name: name, do: do, keys: map[string]bool{}}
}

func (f *fakeOp) Name() string                { return f.name }
func (f *fakeOp) Setup(context.Context) error { return nil }
func (f *fakeOp) Do(_ context.Context, req Request) error {
	f.calls.Add(1)
	f.mu.Lock()
	if f.keys[req.Key()] {
		f.dupes++
	}
	f.keys[req.Key()] = true
	f.mu.Unlock()
	if f.do == nil {
		return nil
	}
	return f.do(req)
}

func TestCyclerRunsEveryOperationOncePerCycle(t *testing.T) {
	c := newCycler(5, 42)
	for cycle := range 50 {
		seen := map[int]bool{}
		for range 5 {
			op, seq := c.next()
			assert.False(t, seen[op], "cycle %d repeats op %d", cycle, op)
			seen[op] = true
			assert.Equal(t, cycle, seq)
		}
	}
}

func TestClosedLoopInterleavesAndCountsFailures(t *testing.T) {
	fine := newFakeOp("fine", nil)
	failing := newFakeOp("failing", func(req Request) error {
		if req.Seq%3 == 0 {
			return errors.New("rejected")
		}
		return nil
	})
	ops := []Operation{fine, failing}
	r := newRunner(ops, 4, &live{}, time.Second)
	res, err := r.run(context.Background(), 1, phasePlan{mode: ModeClosed, workers: 4, duration: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, res.Operations, 2)

	a, b := res.Operations[0], res.Operations[1]
	assert.Equal(t, fine.calls.Load(), a.Requests)
	assert.Equal(t, failing.calls.Load(), b.Requests+b.Errors)
	assert.Positive(t, b.Errors)
	assert.Equal(t, "rejected", b.FirstError)
	// Interleaved: per worker the two counts differ by at most one.
	assert.InDelta(t, fine.calls.Load(), failing.calls.Load(), 4)
	assert.Zero(t, fine.dupes+failing.dupes, "every request of an operation has its own key")
	assert.Equal(t, "send", res.LatencyFrom)
}

// A stall of one request must show in the latency of the requests scheduled behind it: that is
// what measuring from the intended start is for.
func TestOpenLoopChargesBacklogToLatency(t *testing.T) {
	const stall = 300 * time.Millisecond
	op := newFakeOp("op", func(req Request) error {
		if req.Seq == 10 {
			time.Sleep(stall)
		}
		return nil
	})
	r := newRunner([]Operation{op}, 1, &live{}, time.Second)
	res, err := r.run(context.Background(), 0, phasePlan{mode: ModeOpen, workers: 1, rate: 100, duration: time.Second})
	require.NoError(t, err)
	s := res.Operations[0]
	assert.Equal(t, int64(100), s.Requests, "every scheduled request is sent")
	assert.Zero(t, s.Unsent)
	assert.GreaterOrEqual(t, s.MaxMs, float64(stall.Milliseconds()))
	// About 30 requests were due during the stall; a service-time measure would show one slow
	// request and a p90 near zero.
	assert.Greater(t, s.P90Ms, 50.0)
	assert.Equal(t, "intended start", res.LatencyFrom)
}

func TestOpenLoopCountsWhatItCouldNotSend(t *testing.T) {
	op := newFakeOp("slow", func(Request) error { time.Sleep(40 * time.Millisecond); return nil })
	r := newRunner([]Operation{op}, 1, &live{}, 100*time.Millisecond)
	res, err := r.run(context.Background(), 0, phasePlan{mode: ModeOpen, workers: 1, rate: 100, duration: 500 * time.Millisecond})
	require.NoError(t, err)
	s := res.Operations[0]
	assert.Positive(t, s.Unsent)
	assert.Equal(t, int64(50), s.Requests+s.Unsent, "sent plus unsent is the schedule")
}

func TestRunnerStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	op := newFakeOp("op", func(Request) error { cancel(); return nil })
	r := newRunner([]Operation{op}, 2, &live{}, time.Second)
	start := time.Now()
	_, err := r.run(ctx, 0, phasePlan{mode: ModeClosed, workers: 2, duration: time.Minute})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestMessageRateIsPerWorkerTimeInClosedLoops(t *testing.T) {
	closed := phasePlan{mode: ModeClosed, workers: 16}
	s := Summary{PerRequest: 100, MeanMs: 20, Throughput: 5}
	assert.InDelta(t, 16*100/0.020, messageRate(closed, s), 1e-6, "16 workers, 100 messages per 20 ms")
	assert.InDelta(t, 500, messageRate(phasePlan{mode: ModeOpen, workers: 16}, s), 1e-9, "open loop: the rate kept")
	assert.Zero(t, messageRate(closed, Summary{PerRequest: 1}), "nothing recorded")
}
