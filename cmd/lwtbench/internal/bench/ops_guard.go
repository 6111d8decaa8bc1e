package bench

import (
	"context"
	"fmt"

	"github.com/cassdedup/cassdedup/guard"
)

// guardTopic is the topic of the guard operation's messages; the consumer group is the
// operation's namespace, so runs and operations never share a message id.
const guardTopic = "lwtbench"

// guardPayload is the body of every message: small, as event payloads usually are. The guard
// hashes it to detect two messages sharing an id.
var guardPayload = []byte(`{"type":"order.created","id":"lwtbench"}`)

// guardProcess runs guard.Guard.Process on new messages with a handler that does nothing, so
// it measures what the guard costs a consumer: the claim, the by-scope index write and the
// completion.
type guardProcess struct {
	guard *guard.Guard
	group string
}

// guard is the consumer guard of the run's keyspace and consistencies, as every guard operation
// measures it.
func (env Env) guard() (*guard.Guard, error) {
	return guard.New(env.Session, guard.WithKeyspace(env.Keyspace),
		guard.WithConsistency(env.Consistency), guard.WithSerialConsistency(env.Serial))
}

func newGuardProcess(env Env) (Operation, error) {
	g, err := env.guard()
	if err != nil {
		return nil, err
	}
	return &guardProcess{guard: g, group: env.Namespace("guard")}, nil
}

// Name names the operation in reports.
func (g *guardProcess) Name() string { return "guard" }

// Setup prepares the operation before the timed phases.
func (g *guardProcess) Setup(context.Context) error { return nil }

// Do processes a new message. Each worker consumes its own broker partition, as a consumer
// group's members do, so the by-scope index is written to one partition per worker rather than
// all workers contending on one.
func (g *guardProcess) Do(ctx context.Context, req Request) error {
	m := guard.Message{
		Scope:   guard.Scope{Group: g.group, Topic: guardTopic, Partition: int32(req.Worker)},
		ID:      req.Key(),
		Payload: guardPayload,
	}
	ran := false
	out, err := g.guard.Process(ctx, m, func(context.Context, guard.Message) error {
		ran = true
		return nil
	})
	if err != nil {
		return err
	}
	return checkProcessed(out, ran)
}

// checkProcessed returns an error unless a new message was processed by running its handler.
func checkProcessed(out guard.Outcome, ran bool) error {
	switch {
	case out != guard.Processed:
		return fmt.Errorf("%w: a new message was %s", errUnexpectedOutcome, out)
	case !ran:
		return fmt.Errorf("%w: a new message was processed without its handler", errUnexpectedOutcome)
	}
	return nil
}
