package bench

import (
	"context"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
)

// onceCommit measures ExecuteOnce with lwt.WithRepeatableFunction on new keys: the function runs
// first and one conditional insert commits its result (one Paxos round, against once-new's
// two). With box set, the function stages one outbox event, whose intent row is a plain write
// before the insert and whose cell rides in it: what an order service that stages its event
// pays per new order.
type onceCommit struct {
	*onceExecutor
	box *outbox.Outbox
}

func newOnceCommitNew(env Env) (Operation, error) {
	o, err := newOnceExecutor(env, "once-commit-new", 0)
	return onceCommit{onceExecutor: o}, err
}

func newOnceCommitOutbox(env Env) (Operation, error) {
	store, err := lwt.NewStore(env.Session, outbox.Table(env.Keyspace),
		lwt.WithSerialConsistency(env.Serial), lwt.WithConsistency(env.Consistency))
	if err != nil {
		return nil, err
	}
	box, err := outbox.New(env.Session, outbox.WithKeyspace(env.Keyspace), outbox.WithConsistency(env.Consistency),
		outbox.WithSerialConsistency(env.Serial))
	if err != nil {
		return nil, err
	}
	const name = "once-commit-outbox"
	return onceCommit{onceExecutor: &onceExecutor{name: name, namespace: env.Namespace(name), store: store}, box: box}, nil
}

// Setup prepares the operation before the timed phases.
func (onceCommit) Setup(context.Context) error { return nil }

// Do runs one request.
func (o onceCommit) Do(ctx context.Context, req Request) error {
	key := req.Key()
	res, err := o.store.ExecuteOnce(ctx, lwt.IdempotencyKey(o.namespace, key), func(ctx context.Context) ([]byte, error) {
		if o.box != nil {
			if err := o.box.Stage(ctx, outbox.Event{Type: "order.placed", Key: key, Payload: onceResult}); err != nil {
				return nil, err
			}
		}
		return onceResult, nil
	}, lwt.WithRequest(onceRequest), lwt.WithRepeatableFunction())
	if err != nil {
		return err
	}
	return checkFirstRun(res)
}
