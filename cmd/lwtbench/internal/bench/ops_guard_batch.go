package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// maxBatchSize bounds -batch-size: a poll larger than a few conditional batches of
// lwt.MaxBatchRows says nothing more about the gain.
const maxBatchSize = 1000

// guardBatch runs guard.Guard.ProcessBatch on one poll of new messages per request, as a
// consumer of one broker partition receives them, with a handler that does nothing. Its
// latency is a poll's; msg/s counts the messages. With owned set (guard-batch-bloom), each
// worker's partition is owned with a warm pre-check, as bloom owns them, so a poll of new
// messages is recorded with one plain write per partition group and no Paxos round.
type guardBatch struct {
	guard  *guard.Guard
	group  string
	size   int
	owned  *bloomFastPath // nil for guard-batch: the scopes it owns, and their fast paths
	claims atomic.Int64   // handler runs under a claim, for the check in Close
}

func newGuardBatchBloom(env Env) (Operation, error) {
	op, err := newGuardBatch(env)
	if err != nil {
		return nil, err
	}
	g := op.(*guardBatch)
	if len(env.WorkerSpans) < env.MaxWorkers {
		return nil, fmt.Errorf("guard-batch-bloom: %d worker spans for %d workers", len(env.WorkerSpans), env.MaxWorkers)
	}
	g.group = env.Namespace("guard-batch-bloom")
	spans := make([]time.Duration, env.MaxWorkers)
	for w := range spans {
		// A worker sends a poll's messages where bloom sends one: size its filter for them.
		spans[w] = env.WorkerSpans[w] * time.Duration(g.size)
	}
	g.owned = &bloomFastPath{guard: g.guard, group: g.group, spans: spans}
	return g, nil
}

func newGuardBatch(env Env) (Operation, error) {
	g, err := env.guard()
	if err != nil {
		return nil, err
	}
	size := env.BatchSize
	if size < 1 || size > maxBatchSize {
		return nil, fmt.Errorf("guard-batch: batch size %d: want 1..%d", size, maxBatchSize)
	}
	return &guardBatch{guard: g, group: env.Namespace("guard-batch"), size: size}, nil
}

// Name names the operation in reports.
func (g *guardBatch) Name() string {
	if g.owned != nil {
		return "guard-batch-bloom"
	}
	return "guard-batch"
}

// PerRequest is the messages of one poll.
func (g *guardBatch) PerRequest() int { return g.size }

// Setup owns guard-batch-bloom's scopes (see bloomFastPath.Setup); guard-batch needs nothing.
func (g *guardBatch) Setup(ctx context.Context) error {
	if g.owned != nil {
		return g.owned.Setup(ctx)
	}
	return nil
}

// Close disowns guard-batch-bloom's scopes and fails the run if any of its new messages ran
// under a claim: a poll of new messages of an owned scope must take the fast path whole.
func (g *guardBatch) Close() error {
	if g.owned == nil {
		return nil
	}
	for _, sc := range g.owned.scopes {
		g.guard.Disown(sc)
	}
	if n := g.claims.Load(); n != 0 {
		return fmt.Errorf("guard-batch-bloom: %d new messages of owned scopes took the LWT path", n)
	}
	return nil
}

// Do processes one poll of new messages of the worker's own broker partition, produced now.
func (g *guardBatch) Do(ctx context.Context, req Request) error {
	scope := guard.Scope{Group: g.group, Topic: guardTopic, Partition: int32(req.Worker)}
	at := time.Now()
	msgs := make([]guard.Message, g.size)
	for i := range msgs {
		msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprintf("%s-%d", req.Key(), i), Payload: guardPayload, Time: at}
	}
	var ran atomic.Int64
	res, err := g.guard.ProcessBatch(ctx, msgs, func(ctx context.Context, _ guard.Message) error {
		ran.Add(1)
		if _, claimed := lwt.ClaimFromContext(ctx); claimed && g.owned != nil {
			g.claims.Add(1)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
		if r.Outcome != guard.Processed {
			return fmt.Errorf("%w: a new message was %s", errUnexpectedOutcome, r.Outcome)
		}
	}
	if int(ran.Load()) != len(msgs) {
		return fmt.Errorf("%w: %d of %d new messages ran their handler", errUnexpectedOutcome, ran.Load(), len(msgs))
	}
	return nil
}
