package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cassdedup/cassdedup/events"
)

// maxBatchSize bounds -batch-size: a poll larger than a few conditional batches of
// lwt.MaxBatchRows says nothing more about the gain.
const maxBatchSize = 1000

// guardBatch runs events.Guard.ProcessBatch on one poll of new messages per request, as a
// consumer of one broker partition receives them, with a handler that does nothing. Its
// latency is a poll's; msg/s counts the messages.
type guardBatch struct {
	guard *events.Guard
	group string
	size  int
}

func newGuardBatch(env Env) (Operation, error) {
	g, err := events.NewGuard(env.Session, events.WithKeyspace(env.Keyspace),
		events.WithConsistency(env.Consistency), events.WithSerialConsistency(env.Serial))
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
func (g *guardBatch) Name() string { return "guard-batch" }

// PerRequest is the messages of one poll.
func (g *guardBatch) PerRequest() int { return g.size }

// Setup prepares the operation before the timed phases.
func (g *guardBatch) Setup(context.Context) error { return nil }

// Do processes one poll of new messages of the worker's own broker partition, produced now.
func (g *guardBatch) Do(ctx context.Context, req Request) error {
	scope := events.Scope{Group: g.group, Topic: guardTopic, Partition: int32(req.Worker)}
	at := time.Now()
	msgs := make([]events.Message, g.size)
	for i := range msgs {
		msgs[i] = events.Message{Scope: scope, ID: fmt.Sprintf("%s-%d", req.Key(), i), Payload: guardPayload, Time: at}
	}
	var ran atomic.Int64
	res, err := g.guard.ProcessBatch(ctx, msgs, func(context.Context, events.Message) error {
		ran.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
		if r.Outcome != events.Processed {
			return fmt.Errorf("%w: a new message was %s", errUnexpectedOutcome, r.Outcome)
		}
	}
	if int(ran.Load()) != len(msgs) {
		return fmt.Errorf("%w: %d of %d new messages ran their handler", errUnexpectedOutcome, ran.Load(), len(msgs))
	}
	return nil
}
