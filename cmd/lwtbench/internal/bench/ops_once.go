package bench

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cassdedup/cassdedup/internal/parallel"
	"github.com/cassdedup/cassdedup/lwt"
)

// The three operations below measure lwt's exactly-once executor, Store.ExecuteOnce, as a
// caller uses it: a key of the idempotency_keys table, the request it stands for (so the record
// carries a fingerprint, as the CQL operations' rows do) and a function with a small result.
//
// The duplicate operations cycle over a pool of keys completed in Setup rather than sizing a
// pool to the run: a COMPLETED record replays for its whole retention (24 h), so every request
// on a pool key is a true duplicate, however long the run. The pool is the size of lwt-dup's
// and spread the same way, so the partitions they hit are equally hot on the node and
// once-dup-node / lwt-dup isolates what the executor adds to the rejected LWT.

// onceRequest is the request every key of the once operations stands for: an API payload of
// typical size. Only its SHA-256 is stored.
var onceRequest = bytes.Repeat([]byte("r"), 256)

// onceResult is what the operation's function returns and the store keeps: a small response.
var onceResult = []byte(`{"status":201,"id":"lwtbench"}`)

// onceExecutor runs ExecuteOnce on keys of its own namespace.
type onceExecutor struct {
	name      string
	namespace string
	store     *lwt.Store
}

func newOnceExecutor(env Env, name string, cacheSize int) (*onceExecutor, error) {
	opts := []lwt.StoreOption{lwt.WithSerialConsistency(env.Serial), lwt.WithConsistency(env.Consistency)}
	if cacheSize > 0 {
		opts = append(opts, lwt.WithCache(cacheSize))
	}
	store, err := lwt.NewStore(env.Session, lwt.IdempotencyKeys(env.Keyspace), opts...)
	if err != nil {
		return nil, err
	}
	return &onceExecutor{name: name, namespace: env.Namespace(name), store: store}, nil
}

// Name names the operation in reports.
func (o *onceExecutor) Name() string { return o.name }

func (o *onceExecutor) execute(ctx context.Context, key string) (lwt.Result, error) {
	return o.store.ExecuteOnce(ctx, lwt.IdempotencyKey(o.namespace, key), func(context.Context) ([]byte, error) {
		return onceResult, nil
	}, lwt.WithRequest(onceRequest))
}

// checkFirstRun returns an error unless res is the answer of a call that ran the function now.
func checkFirstRun(res lwt.Result) error {
	switch {
	case res.Replay:
		return fmt.Errorf("%w: a new key was replayed", errUnexpectedOutcome)
	case !bytes.Equal(res.Value, onceResult):
		return fmt.Errorf("%w: a new key returned %q, not the function's result", errUnexpectedOutcome, res.Value)
	}
	return nil
}

// checkReplay returns an error unless res replays the stored result, from the in-process cache
// exactly when fromCache is set.
func checkReplay(res lwt.Result, fromCache bool) error {
	switch {
	case !res.Replay:
		return fmt.Errorf("%w: a completed key ran its function again", errUnexpectedOutcome)
	case !bytes.Equal(res.Value, onceResult):
		return fmt.Errorf("%w: a replay returned %q, not the stored result", errUnexpectedOutcome, res.Value)
	case res.FromCache != fromCache:
		return fmt.Errorf("%w: replay from cache %t, want %t", errUnexpectedOutcome, res.FromCache, fromCache)
	}
	return nil
}

type onceNew struct{ *onceExecutor }

func newOnceNew(env Env) (Operation, error) {
	o, err := newOnceExecutor(env, "once-new", 0)
	return onceNew{o}, err
}

// Setup prepares the operation before the timed phases.
func (onceNew) Setup(context.Context) error { return nil }

// Do runs one request.
func (o onceNew) Do(ctx context.Context, req Request) error {
	res, err := o.execute(ctx, req.Key())
	if err != nil {
		return err
	}
	return checkFirstRun(res)
}

// onceDuplicate replays completed keys of its pool; with a cache, from the cache.
type onceDuplicate struct {
	*onceExecutor
	fromCache bool
}

func newOnceDupNode(env Env) (Operation, error) {
	o, err := newOnceExecutor(env, "once-dup-node", 0)
	return onceDuplicate{onceExecutor: o}, err
}

func newOnceDupCache(env Env) (Operation, error) {
	o, err := newOnceExecutor(env, "once-dup-cache", duplicatePool)
	return onceDuplicate{onceExecutor: o, fromCache: true}, err
}

// Setup completes every key of the pool by running it once, as a first attempt would. With a
// cache, completing a key also caches it; a second call per key checks that it did, so no
// timed request pays for a cache miss.
func (d onceDuplicate) Setup(ctx context.Context) error {
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		res, err := d.execute(ctx, duplicateKey(i))
		if err == nil {
			err = checkFirstRun(res)
		}
		if err != nil || !d.fromCache {
			return err
		}
		if res, err = d.execute(ctx, duplicateKey(i)); err != nil {
			return err
		}
		return checkReplay(res, true)
	})
}

// Do runs one request.
func (d onceDuplicate) Do(ctx context.Context, req Request) error {
	res, err := d.execute(ctx, duplicateKey(poolIndex(req)))
	if err != nil {
		return err
	}
	return checkReplay(res, d.fromCache)
}
