package bench

import (
	"context"
	"crypto/sha256"
	"fmt"

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
		Spec{Name: "pg-insert", Server: ServerPostgres, Baseline: "pg-insert", New: newPGInsert,
			Description: "Postgres: INSERT of one row, autocommit (the plain write)"},
		Spec{Name: "pg-once-new", Server: ServerPostgres, Baseline: "pg-insert", New: newPGOnceNew,
			Description: "Postgres idempotency_keys on new keys: claim (INSERT ... ON CONFLICT DO NOTHING), run, store the response (fenced UPDATE): two commits"},
		Spec{Name: "pg-once-dup", Server: ServerPostgres, Baseline: "pg-insert", New: newPGOnceDup,
			Description: "Postgres idempotency_keys on a finished key: the claim statement returns the stored response (no write)"},
		Spec{Name: "pg-once-outbox", Server: ServerPostgres, Baseline: "pg-insert", New: newPGOnceOutbox,
			Description: "Postgres idempotency_keys on new keys whose run writes the business row and outbox row in the completion's transaction: two commits"},
		Spec{Name: "pg-outbox", Server: ServerPostgres, Baseline: "pg-insert", New: newPGOutbox,
			Description: "Postgres outbox producer side: business row + outbox row in one transaction (no idempotency record)"},
	)
	for _, srv := range []string{ServerRedisAlways, ServerRedisEverysec} {
		out = append(out,
			Spec{Name: srv + "-set", Server: srv, Baseline: srv + "-set", New: newRedisSet(srv),
				Description: "Redis (" + redisDurability(srv) + "): SET PX on new keys (the plain write)"},
			Spec{Name: srv + "-once-new", Server: srv, Baseline: srv + "-set", New: newRedisOnceNew(srv),
				Description: "Redis (" + redisDurability(srv) + "): claim (SET NX PX GET), run, store the result (fenced script)"},
			Spec{Name: srv + "-once-dup", Server: srv, Baseline: srv + "-set", New: newRedisOnceDup(srv),
				Description: "Redis (" + redisDurability(srv) + "): the claim on a done key returns the stored result"},
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

// peerOp is what every peer operation shares: its name, its key space and the request timeout
// (gocql has one of its own; pgx and go-redis take the context's).
type peerOp struct {
	name, namespace string
	env             Env
}

func newPeerOp(env Env, name string) peerOp {
	return peerOp{name: name, namespace: env.Namespace(name), env: env}
}

// Name names the operation in reports.
func (p peerOp) Name() string { return p.name }

// Setup prepares the operation before the timed phases.
func (peerOp) Setup(context.Context) error { return nil }

func (p peerOp) key(k string) string { return p.namespace + "/" + k }

func (p peerOp) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.env.RequestTimeout)
}

func (p peerOp) postgres() (*peers.Postgres, error) {
	if p.env.Peers.Postgres == nil {
		return nil, fmt.Errorf("%s needs a Postgres server: -postgres URL", p.name)
	}
	return p.env.Peers.Postgres, nil
}

func checkPeerFirstRun(res peers.Result) error {
	if res.Replay || string(res.Value) != string(onceResult) {
		return fmt.Errorf("%w: a new key answered replay %t, %q", errUnexpectedOutcome, res.Replay, res.Value)
	}
	return nil
}

func checkPeerReplay(res peers.Result) error {
	if !res.Replay || string(res.Value) != string(onceResult) {
		return fmt.Errorf("%w: a finished key answered replay %t, %q", errUnexpectedOutcome, res.Replay, res.Value)
	}
	return nil
}

func runOnce(context.Context) ([]byte, error) { return onceResult, nil }

type pgInsert struct {
	peerOp
	pg *peers.Postgres
}

func newPGInsert(env Env) (Operation, error) {
	op := newPeerOp(env, "pg-insert")
	pg, err := op.postgres()
	return pgInsert{op, pg}, err
}

// Do runs one request.
func (o pgInsert) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	return o.pg.Insert(ctx, o.key(req.Key()), peerFingerprint)
}

type pgOnceNew struct{ pgInsert }

func newPGOnceNew(env Env) (Operation, error) {
	op := newPeerOp(env, "pg-once-new")
	pg, err := op.postgres()
	return pgOnceNew{pgInsert{op, pg}}, err
}

// Do runs one request.
func (o pgOnceNew) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	res, err := o.pg.ExecuteOnce(ctx, o.key(req.Key()), peerFingerprint, runOnce)
	if err != nil {
		return err
	}
	return checkPeerFirstRun(res)
}

type pgOnceDup struct{ pgInsert }

func newPGOnceDup(env Env) (Operation, error) {
	op := newPeerOp(env, "pg-once-dup")
	pg, err := op.postgres()
	return pgOnceDup{pgInsert{op, pg}}, err
}

// Setup finishes every key of the pool (the same pool size as once-dup-node's).
func (o pgOnceDup) Setup(ctx context.Context) error {
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		res, err := o.pg.ExecuteOnce(ctx, o.key(duplicateKey(i)), peerFingerprint, runOnce)
		if err != nil {
			return err
		}
		return checkPeerFirstRun(res)
	})
}

// Do runs one request.
func (o pgOnceDup) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	res, err := o.pg.ExecuteOnce(ctx, o.key(duplicateKey(poolIndex(req))), peerFingerprint, runOnce)
	if err != nil {
		return err
	}
	return checkPeerReplay(res)
}

type pgOnceOutbox struct{ pgInsert }

func newPGOnceOutbox(env Env) (Operation, error) {
	op := newPeerOp(env, "pg-once-outbox")
	pg, err := op.postgres()
	return pgOnceOutbox{pgInsert{op, pg}}, err
}

// Do runs one request: once-new-outbox's counterpart, the order row and its event committed
// with the stored response.
func (o pgOnceOutbox) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	key := o.key(req.Key())
	res, err := o.pg.ExecuteOnceTx(ctx, key, peerFingerprint, func(_ context.Context, b *pgx.Batch) ([]byte, error) {
		peers.QueueOutbox(b, key, onceResult, outboxEvent.Type, outboxEvent.Payload)
		return onceResult, nil
	})
	if err != nil {
		return err
	}
	return checkPeerFirstRun(res)
}

type pgOutbox struct{ pgInsert }

func newPGOutbox(env Env) (Operation, error) {
	op := newPeerOp(env, "pg-outbox")
	pg, err := op.postgres()
	return pgOutbox{pgInsert{op, pg}}, err
}

// Do runs one request: the order row and its event, as once-new-outbox stages them.
func (o pgOutbox) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	return o.pg.InsertWithOutbox(ctx, o.key(req.Key()), onceResult, outboxEvent.Type, outboxEvent.Payload)
}

type redisSet struct {
	peerOp
	rd *peers.Redis
}

func newRedisOp(env Env, server, name string) (redisSet, error) {
	op := newPeerOp(env, name)
	rd := env.Peers.Redis[server]
	if rd == nil {
		return redisSet{}, fmt.Errorf("%s needs a Redis server with %s: -%s ADDR", name, redisDurability(server), server)
	}
	return redisSet{op, rd}, nil
}

func newRedisSet(server string) func(Env) (Operation, error) {
	return func(env Env) (Operation, error) { return newRedisOp(env, server, server+"-set") }
}

// Do runs one request.
func (o redisSet) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	return o.rd.Set(ctx, o.key(req.Key()), onceResult)
}

type redisOnceNew struct{ redisSet }

func newRedisOnceNew(server string) func(Env) (Operation, error) {
	return func(env Env) (Operation, error) {
		op, err := newRedisOp(env, server, server+"-once-new")
		return redisOnceNew{op}, err
	}
}

// Do runs one request.
func (o redisOnceNew) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	res, err := o.rd.ExecuteOnce(ctx, o.key(req.Key()), peerFingerprint, runOnce)
	if err != nil {
		return err
	}
	return checkPeerFirstRun(res)
}

type redisOnceDup struct{ redisSet }

func newRedisOnceDup(server string) func(Env) (Operation, error) {
	return func(env Env) (Operation, error) {
		op, err := newRedisOp(env, server, server+"-once-dup")
		return redisOnceDup{op}, err
	}
}

// Setup finishes every key of the pool.
func (o redisOnceDup) Setup(ctx context.Context) error {
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		res, err := o.rd.ExecuteOnce(ctx, o.key(duplicateKey(i)), peerFingerprint, runOnce)
		if err != nil {
			return err
		}
		return checkPeerFirstRun(res)
	})
}

// Do runs one request.
func (o redisOnceDup) Do(ctx context.Context, req Request) error {
	ctx, cancel := o.withTimeout(ctx)
	defer cancel()
	res, err := o.rd.ExecuteOnce(ctx, o.key(duplicateKey(poolIndex(req))), peerFingerprint, runOnce)
	if err != nil {
		return err
	}
	return checkPeerReplay(res)
}
