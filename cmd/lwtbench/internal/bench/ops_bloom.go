package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// The bloom operation is the guard operation with ownership declared: each worker is the one
// consumer of its own partition (as in guard), and the guard owns that partition's scope with a
// warm Bloom pre-check, so a new message runs its handler without a claim and is recorded with
// plain writes. That is exact only because no other process receives these scopes; a real
// consumer must call Own on assignment and Disown on revocation.
//
// A request counts as an answer only if it took the fast path: a pre-check false positive, a
// cold filter or a lost ownership sends a message to the LWT path, and timing that as "bloom"
// would report the LWT's latency under the fast path's name. The handler tells the two apart by
// the claim in its context, which only the LWT path gives it (see guard.Guard).

const (
	// bloomEpoch is the ownership epoch of every scope: each is owned once, for the whole run.
	bloomEpoch = 1

	// bloomWorkerRate is the request rate one worker's pre-check is sized for. A fast-path
	// request is two acknowledged writes, well over 200 µs even to a local node, so one
	// sequential worker stays below it, even when it runs this operation alone.
	bloomWorkerRate = 5000 // per second

	// bloomFalsePositiveRate is the pre-check's target at its full sizing. A false positive
	// makes a request fail, so it is set low enough that a run filling the filter expects well
	// under one; a run that fills it less expects far fewer.
	bloomFalsePositiveRate = 1e-7

	// bloomMinItems keeps the filter of a worker that runs briefly from being sized to nothing.
	bloomMinItems = 10_000

	// bloomMaxItems bounds the items of all the run's pre-checks together, about 150 MB of
	// filters at the rate above: a long sweep to high concurrency would otherwise size hundreds
	// of workers each for the rate one worker reaches alone. Beyond the bound the sizes shrink in
	// proportion; a run that then outgrows a filter shows false positives as errors.
	bloomMaxItems = 16_000_000
)

// errNotFastPath marks a request that took the LWT path: a wrong answer for this operation.
var errNotFastPath = fmt.Errorf("%w: the message took the LWT path, not the fast path", errUnexpectedOutcome)

// bloomFastPath runs guard.Guard.Process on new messages of scopes the guard owns.
type bloomFastPath struct {
	guard  *guard.Guard
	group  string
	spans  []time.Duration
	scopes []guard.Scope // one per worker, owned in Setup
	fast   atomic.Uint64 // handler runs without a claim, for the check in Close
}

func newBloomFastPath(env Env) (Operation, error) {
	g, err := env.guard()
	if err != nil {
		return nil, err
	}
	spans := env.WorkerSpans
	if len(spans) < env.MaxWorkers {
		return nil, fmt.Errorf("bloom: %d worker spans for %d workers", len(spans), env.MaxWorkers)
	}
	return &bloomFastPath{guard: g, group: env.Namespace("bloom"), spans: spans[:env.MaxWorkers]}, nil
}

// Name names the operation in reports.
func (b *bloomFastPath) Name() string { return "bloom" }

// scope is worker w's partition: one consumer per partition, as ownership requires.
func (b *bloomFastPath) scope(w int) guard.Scope {
	return guard.Scope{Group: b.group, Topic: guardTopic, Partition: int32(w)}
}

// Setup owns every worker's scope with a pre-check sized for that worker's part of the run.
// Own returns once the pre-check is warm, so no timed request meets a cold filter.
func (b *bloomFastPath) Setup(ctx context.Context) error {
	for w, items := range bloomSizes(b.spans) {
		sc := b.scope(w)
		pre, err := bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", sc.Group, sc.Topic, sc.Partition),
			bloomPreCheckOptions(items)...)
		if err != nil {
			return err
		}
		// Recorded before Own, so Close disowns a scope whose warm-up failed halfway too.
		b.scopes = append(b.scopes, sc)
		if err := b.guard.Own(ctx, sc, bloomEpoch, pre); err != nil {
			return err
		}
	}
	return nil
}

// bloomPreCheckOptions sizes a pre-check for items new messages.
//
// The horizon is the default one (messages carry their time, so the pre-check vouches for them
// within it). One generation keeps every key of the run in the generation sized for it: with
// several, each would be sized for a fraction of the run's keys yet a run (minutes long)
// never reaches the first rotation.
func bloomPreCheckOptions(items uint64) []bloom.PreCheckOption {
	return []bloom.PreCheckOption{
		bloom.WithExpectedItems(items),
		bloom.WithFalsePositiveRate(bloomFalsePositiveRate),
		bloom.WithGenerations(1),
	}
}

// bloomSizes returns the items each worker's pre-check is sized for: what the worker can send
// during its span at bloomWorkerRate, at least bloomMinItems, shrunk in proportion when the
// total would exceed bloomMaxItems.
func bloomSizes(spans []time.Duration) []uint64 {
	want := make([]float64, len(spans))
	var total float64
	for w, span := range spans {
		want[w] = math.Ceil(span.Seconds() * bloomWorkerRate)
		total += want[w]
	}
	scale := 1.0
	if total > bloomMaxItems {
		scale = bloomMaxItems / total
	}
	sizes := make([]uint64, len(spans))
	for w := range want {
		sizes[w] = max(uint64(want[w]*scale), bloomMinItems)
	}
	return sizes
}

// Do processes a new message of the worker's owned scope and fails unless the fast path took it.
func (b *bloomFastPath) Do(ctx context.Context, req Request) error {
	m := guard.Message{Scope: b.scope(req.Worker), ID: req.Key(), Payload: guardPayload, Time: time.Now()}
	ran, claimed := false, false
	out, err := b.guard.Process(ctx, m, func(ctx context.Context, _ guard.Message) error {
		ran = true
		_, claimed = lwt.ClaimFromContext(ctx)
		return nil
	})
	if ran && !claimed {
		b.fast.Add(1) // counted even if recording failed after: the guard counts those too
	}
	if err != nil {
		return err
	}
	return checkFastPath(out, ran, claimed)
}

// checkFastPath returns an error unless a new message was processed by its handler, without a
// claim: on the fast path.
func checkFastPath(out guard.Outcome, ran, claimed bool) error {
	if err := checkProcessed(out, ran); err != nil {
		return err
	}
	if claimed {
		return errNotFastPath
	}
	return nil
}

// Close disowns the scopes and checks the guard's own count of fast paths against the handler
// runs that saw no claim: a mismatch means the per-request check missed something.
func (b *bloomFastPath) Close() error {
	s := b.guard.Stats()
	for _, sc := range b.scopes {
		b.guard.Disown(sc)
	}
	var errs []error
	if fast := b.fast.Load(); uint64(s.FastPath) != fast {
		errs = append(errs, fmt.Errorf("the guard counted %d fast paths, the handlers %d", s.FastPath, fast))
	}
	if s.FastPathLWT != 0 {
		errs = append(errs, fmt.Errorf("%d messages of owned scopes took the LWT path", s.FastPathLWT))
	}
	return errors.Join(errs...)
}
