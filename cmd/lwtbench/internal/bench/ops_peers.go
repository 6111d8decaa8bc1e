package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cassdedup/cassdedup/cmd/lwtbench/internal/peers"
	"github.com/cassdedup/cassdedup/internal/parallel"
)

// The servers of a -peers run. Cassandra's operations (Spec.Server empty) run on the run's
// cluster; the others each on a server of their own.
const (
	ServerCassandra     = "cassandra"
	ServerPostgres      = "postgres"
	ServerRedisAlways   = "redis-always"   // appendfsync always: fsynced before the reply
	ServerRedisEverysec = "redis-everysec" // appendfsync everysec, Redis's default
)

// PeerStores are the other stores' connections of a -peers run.
type PeerStores struct {
	Postgres *peers.Postgres
	Redis    map[string]*peers.Redis // by server: ServerRedisAlways, ServerRedisEverysec
}

// peersOurs are the toolkit's operations a -peers run measures beside the peers, in order: the
// plain write, the executor on a new key and on a duplicate, and the outbox's producer side.
// This round's one-round ExecuteOnce mode joins by adding its Catalog name here.
var peersOurs = []string{Baseline, "once-new", "once-dup-node", "once-new-outbox"}

// PeersCatalog is the catalog of a -peers run: peersOurs from Catalog, then the peers'
// operations, each with the plain write of its own store as its baseline.
func PeersCatalog() []Spec {
	var out []Spec
	for _, name := range peersOurs {
		for _, s := range Catalog() {
			if s.Name == name {
				out = append(out, s)
			}
		}
	}
	out = append(out,
		peerSpec(ServerPostgres, "pg-insert", peerWrite, pgInsert,
			"Postgres: INSERT of one row, autocommit (the plain write)"),
		peerSpec(ServerPostgres, "pg-once-new", peerNew, pgOnce,
			"Postgres idempotency_keys on new keys: claim (INSERT ... ON CONFLICT DO NOTHING), run, store the response (fenced UPDATE): two commits"),
		peerSpec(ServerPostgres, "pg-once-dup", peerDup, pgOnce,
			"Postgres idempotency_keys on a finished key: the claim statement returns the stored response (no write)"),
		peerSpec(ServerPostgres, "pg-once-outbox", peerNew, pgOnceOutbox,
			"Postgres idempotency_keys on new keys whose run writes the business row and outbox row in the completion's transaction: two commits"),
		peerSpec(ServerPostgres, "pg-outbox", peerWrite, pgOutbox,
			"Postgres outbox producer side: business row + outbox row in one transaction (no idempotency record)"),
	)
	for _, srv := range []string{ServerRedisAlways, ServerRedisEverysec} {
		on := "Redis (" + redisDurability(srv) + "): "
		out = append(out,
			peerSpec(srv, srv+"-set", peerWrite, redisSet(srv), on+"SET PX on new keys (the plain write)"),
			peerSpec(srv, srv+"-once-new", peerNew, redisOnce(srv), on+"claim (SET NX PX GET), run, store the result (fenced script)"),
			peerSpec(srv, srv+"-once-dup", peerDup, redisOnce(srv), on+"the claim on a done key returns the stored result"),
		)
	}
	return out
}

func redisDurability(server string) string {
	if server == ServerRedisAlways {
		return "appendfsync always"
	}
	return "appendfsync everysec"
}

// peerFingerprint is the fingerprint of onceRequest, the request every key stands for.
var peerFingerprint = func() []byte { h := sha256.Sum256(onceRequest); return h[:] }()

// peerKind is what a peer operation's requests are, and so what they must answer.
type peerKind int

const (
	peerWrite peerKind = iota // the store's plain write on a new key: its answer is not judged
	peerNew                   // an idempotent call on a new key: it must run, not replay
	peerDup                   // an idempotent call on a finished key of the pool: it must replay
)

// judge returns err, or errUnexpectedOutcome when res is not what a request of kind k answers.
func (k peerKind) judge(res peers.Result, err error) error {
	if err != nil || k == peerWrite {
		return err
	}
	if res.Replay != (k == peerDup) || string(res.Value) != string(onceResult) {
		key := "new"
		if k == peerDup {
			key = "finished"
		}
		return fmt.Errorf("%w: a %s key answered replay %t, %q", errUnexpectedOutcome, key, res.Replay, res.Value)
	}
	return nil
}

// peerCall sends one request of a peer operation for key to its server in stores; a plain
// write's Result is zero.
type peerCall func(ctx context.Context, stores PeerStores, key string) (peers.Result, error)

// peerOp is every operation on a peer store: they differ in their kind and in what they send.
type peerOp struct {
	name, namespace string
	timeout         time.Duration // gocql has one of its own; pgx and go-redis take the context's
	stores          PeerStores
	kind            peerKind
	call            peerCall
}

// peerSpec is the Spec of the operation name on server, whose requests are of kind and sent by
// call; its baseline is the server's plain write.
func peerSpec(server, name string, kind peerKind, call peerCall, description string) Spec {
	baseline := server + "-set"
	if server == ServerPostgres {
		baseline = "pg-insert"
	}
	return Spec{Name: name, Server: server, Baseline: baseline, Description: description,
		New: func(env Env) (Operation, error) {
			if err := env.Peers.need(server, name); err != nil {
				return nil, err
			}
			return peerOp{name: name, namespace: env.Namespace(name), timeout: env.RequestTimeout,
				stores: env.Peers, kind: kind, call: call}, nil
		}}
}

// need refuses op when the run has no connection to server, naming the flag that gives one.
func (p PeerStores) need(server, op string) error {
	switch {
	case server == ServerPostgres && p.Postgres == nil:
		return fmt.Errorf("%s needs a Postgres server: -postgres URL", op)
	case server != ServerPostgres && p.Redis[server] == nil:
		return fmt.Errorf("%s needs a Redis server with %s: -%s ADDR", op, redisDurability(server), server)
	}
	return nil
}

// Name names the operation in reports.
func (o peerOp) Name() string { return o.name }

// Setup finishes every key of a duplicate's pool (the same pool size as once-dup-node's).
func (o peerOp) Setup(ctx context.Context) error {
	if o.kind != peerDup {
		return nil
	}
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		return peerNew.judge(o.call(ctx, o.stores, o.key(duplicateKey(i))))
	})
}

// Do runs one request: on a new key, or on a finished key of the pool for a duplicate.
func (o peerOp) Do(ctx context.Context, req Request) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	key := req.Key()
	if o.kind == peerDup {
		key = duplicateKey(poolIndex(req))
	}
	return o.kind.judge(o.call(ctx, o.stores, o.key(key)))
}

func (o peerOp) key(k string) string { return o.namespace + "/" + k }

func runOnce(context.Context) ([]byte, error) { return onceResult, nil }

func pgInsert(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
	return peers.Result{}, p.Postgres.Insert(ctx, key, peerFingerprint)
}

func pgOnce(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
	return p.Postgres.ExecuteOnce(ctx, key, peerFingerprint, runOnce)
}

// pgOnceOutbox is once-new-outbox's counterpart: the order row and its event committed with the
// stored response.
func pgOnceOutbox(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
	return p.Postgres.ExecuteOnceTx(ctx, key, peerFingerprint, func(_ context.Context, b *pgx.Batch) ([]byte, error) {
		peers.QueueOutbox(b, key, onceResult, outboxEvent.Type, outboxEvent.Payload)
		return onceResult, nil
	})
}

// pgOutbox writes the order row and its event, as once-new-outbox stages them.
func pgOutbox(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
	return peers.Result{}, p.Postgres.InsertWithOutbox(ctx, key, onceResult, outboxEvent.Type, outboxEvent.Payload)
}

func redisSet(server string) peerCall {
	return func(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
		return peers.Result{}, p.Redis[server].Set(ctx, key, onceResult)
	}
}

func redisOnce(server string) peerCall {
	return func(ctx context.Context, p PeerStores, key string) (peers.Result, error) {
		return p.Redis[server].ExecuteOnce(ctx, key, peerFingerprint, runOnce)
	}
}
