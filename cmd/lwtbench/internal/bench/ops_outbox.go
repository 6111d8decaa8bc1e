package bench

import (
	"context"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
)

// onceNewOutbox is once-new with one event staged through the outbox: the intent row (one plain
// write) before the commit, and the event riding in the completion's conditional write. It is
// the producer side of the outbox, exactly once: what a service that replaces Postgres's
// business-row-plus-outbox-row transaction (and Debezium behind it) pays per request.
type onceNewOutbox struct {
	*onceExecutor
	box *outbox.Outbox
}

// outboxEvent is the event each run stages: an order placed, of typical size.
var outboxEvent = outbox.Event{Type: "order.placed", Key: "lwtbench", Payload: onceRequest}

func newOnceNewOutbox(env Env) (Operation, error) {
	const name = "once-new-outbox"
	store, err := lwt.NewStore(env.Session, outbox.Table(env.Keyspace),
		lwt.WithSerialConsistency(env.Serial), lwt.WithConsistency(env.Consistency))
	if err != nil {
		return nil, err
	}
	box, err := outbox.New(env.Session, outbox.WithKeyspace(env.Keyspace),
		outbox.WithConsistency(env.Consistency), outbox.WithSerialConsistency(env.Serial))
	if err != nil {
		return nil, err
	}
	return onceNewOutbox{onceExecutor: &onceExecutor{name: name, namespace: env.Namespace(name), store: store}, box: box}, nil
}

// Setup prepares the operation before the timed phases.
func (onceNewOutbox) Setup(context.Context) error { return nil }

// Do runs one request.
func (o onceNewOutbox) Do(ctx context.Context, req Request) error {
	res, err := o.store.ExecuteOnce(ctx, lwt.IdempotencyKey(o.namespace, req.Key()), func(ctx context.Context) ([]byte, error) {
		if err := o.box.Stage(ctx, outboxEvent); err != nil {
			return nil, err
		}
		return onceResult, nil
	}, lwt.WithRequest(onceRequest))
	if err != nil {
		return err
	}
	return checkFirstRun(res)
}
