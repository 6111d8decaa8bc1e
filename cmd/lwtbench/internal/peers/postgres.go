package peers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is the exactly-once design on one Postgres server, inside a schema of its own (its
// tables are created by OpenPostgres and removed by DropSchema). It is safe for concurrent use.
//
// The idempotency record is one row of idempotency_keys:
//
//	key             the caller's idempotency key (primary key)
//	fingerprint     the request's SHA-256: a reused key with another request is refused
//	owner           the claim's random token: the fence of the completion
//	locked_at       when the claim was taken (its lease runs from here, judged by the server's
//	                clock); NULL once the run finished
//	recovery_point  'started' while a run holds the key, 'finished' once its response is stored:
//	                the point a retry resumes from (a design with several atomic phases adds
//	                one value per phase)
//	response        the stored response, replayed to every retry
//
// A claim is one statement: INSERT ... ON CONFLICT DO NOTHING, and in the same statement the
// existing row when there was one, so a new key and a duplicate both cost one round trip (and a
// duplicate writes nothing, so its commit flushes no WAL). The completion is a second statement,
// conditioned on the owner and the recovery point. Records are deleted after the retention by a
// periodic DELETE (not part of the measured path).
type Postgres struct {
	pool   *pgxpool.Pool
	schema string
	lease  time.Duration
}

// The prepared statements, by name; schema-qualified through the pool's search_path.
var pgStatements = map[string]string{
	"plain_insert": `INSERT INTO plain_writes (key, fingerprint) VALUES ($1, $2)`,
	"claim": `WITH ins AS (
		INSERT INTO idempotency_keys (key, fingerprint, owner, locked_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (key) DO NOTHING
		RETURNING true AS claimed, fingerprint, recovery_point, response, false AS expired)
	SELECT claimed, fingerprint, recovery_point, response, expired FROM ins
	UNION ALL
	SELECT false, fingerprint, recovery_point, response, coalesce(locked_at < now() - make_interval(secs => $4), false)
	FROM idempotency_keys WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
	"take_over": `UPDATE idempotency_keys SET owner = $2, locked_at = now()
		WHERE key = $1 AND recovery_point = 'started' AND locked_at < now() - make_interval(secs => $3)`,
	"complete": `UPDATE idempotency_keys SET recovery_point = 'finished', locked_at = NULL, response = $3
		WHERE key = $1 AND owner = $2 AND recovery_point = 'started'`,
	// complete_or_fail is complete that raises division_by_zero when the claim is gone, so the
	// transaction it opens a batch of (the run's own writes after it) rolls back whole.
	"complete_or_fail": `WITH done AS (UPDATE idempotency_keys SET recovery_point = 'finished', locked_at = NULL, response = $3
		WHERE key = $1 AND owner = $2 AND recovery_point = 'started' RETURNING 1)
	SELECT 1 / count(*) FROM done`,
	"release":       `DELETE FROM idempotency_keys WHERE key = $1 AND owner = $2 AND recovery_point = 'started'`,
	"order_insert":  `INSERT INTO orders (id, body) VALUES ($1, $2)`,
	"outbox_insert": `INSERT INTO outbox (aggregate_id, event_type, payload) VALUES ($1, $2, $3)`,
}

// pgTables is the schema: the plain write's table, the idempotency record, and the outbox's
// business table and outbox table (what Debezium's outbox router reads).
const pgTables = `
CREATE TABLE IF NOT EXISTS plain_writes (
	key text PRIMARY KEY, fingerprint bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS idempotency_keys (
	key text PRIMARY KEY,
	fingerprint bytea NOT NULL,
	owner text NOT NULL,
	locked_at timestamptz,
	recovery_point text NOT NULL DEFAULT 'started' CHECK (recovery_point IN ('started', 'finished')),
	response bytea,
	created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS orders (
	id text PRIMARY KEY, body bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS outbox (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	aggregate_id text NOT NULL,
	event_type text NOT NULL,
	payload bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now());`

// OpenPostgres connects a pool of conns connections to the server at url, creates schema and
// its tables (if absent), prepares the statements on every connection and opens all conns
// connections before it returns, so no measured request pays for a connection or a Parse.
func OpenPostgres(ctx context.Context, url, schema string, conns int) (*Postgres, error) {
	if !validIdentifier(schema) {
		return nil, fmt.Errorf("%w: schema %q: want [a-z_][a-z0-9_]*, at most 63 bytes", ErrInvalid, schema)
	}
	if conns < 1 {
		return nil, fmt.Errorf("%w: %d connections", ErrInvalid, conns)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres url: %w", ErrInvalid, err)
	}
	if err := createSchema(ctx, cfg.ConnConfig.Copy(), schema); err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for name, sql := range pgStatements {
			if _, err := c.Prepare(ctx, name, sql); err != nil {
				return fmt.Errorf("prepare %s: %w", name, err)
			}
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &Postgres{pool: pool, schema: schema, lease: DefaultLease}
	if err := p.openAll(ctx, conns); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

func createSchema(ctx context.Context, cfg *pgx.ConnConfig, schema string) error {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := c.Exec(ctx, "SET search_path = "+schema+";"+pgTables); err != nil {
		return fmt.Errorf("create tables in %s: %w", schema, err)
	}
	return nil
}

// openAll acquires conns connections at once, so the pool holds them all, then hands them back.
func (p *Postgres) openAll(ctx context.Context, conns int) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		held []*pgxpool.Conn
	)
	for range conns {
		wg.Go(func() {
			c, err := p.pool.Acquire(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			held = append(held, c)
		})
	}
	wg.Wait()
	for _, c := range held {
		c.Release()
	}
	return errors.Join(errs...)
}

// Close closes the pool.
func (p *Postgres) Close() { p.pool.Close() }

// DropSchema removes the schema and everything in it.
func (p *Postgres) DropSchema(ctx context.Context) error {
	_, err := p.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+p.schema+" CASCADE")
	return err
}

// SetLease sets how long a claim blocks its key before a retry may take it over.
func (p *Postgres) SetLease(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: lease %v", ErrInvalid, d)
	}
	p.lease = d
	return nil
}

// Insert is the plain write: one row, one autocommitted INSERT.
func (p *Postgres) Insert(ctx context.Context, key string, fp []byte) error {
	if err := validate(key, fp); err != nil {
		return err
	}
	_, err := p.pool.Exec(ctx, "plain_insert", key, fp)
	return err
}

// InsertWithOutbox is the outbox's producer side: the business row and its outbox row in one
// transaction (one round trip: a pgx batch outside a transaction is one implicit transaction),
// committed together or not at all.
func (p *Postgres) InsertWithOutbox(ctx context.Context, id string, body []byte, eventType string, payload []byte) error {
	if id == "" || eventType == "" {
		return fmt.Errorf("%w: empty id or event type", ErrInvalid)
	}
	b := &pgx.Batch{}
	QueueOutbox(b, id, body, eventType, payload)
	return p.pool.SendBatch(ctx, b).Close()
}

// claimAnswer is the claim statement's row.
type claimAnswer struct {
	claimed, expired bool
	fingerprint      []byte
	recoveryPoint    string
	response         []byte
}

// ExecuteOnce runs fn once for key: the first call claims the key (one commit), runs fn and
// stores its result (a second commit, fenced on the claim's owner); a later call with the same
// fingerprint replays the stored result without running fn. A run in progress answers
// ErrInProgress until its lease expires (by the server's clock); then a retry takes it over. An
// error of fn releases the key (its row is deleted), so a retry runs again.
func (p *Postgres) ExecuteOnce(ctx context.Context, key string, fp []byte, fn func(context.Context) ([]byte, error)) (Result, error) {
	return p.execute(ctx, key, fp, func(ctx context.Context, _ *pgx.Batch) ([]byte, error) { return fn(ctx) }, false)
}

// ExecuteOnceTx is ExecuteOnce whose run writes in the completion's transaction: fn returns the
// result and queues its writes on the batch it is given (the business row, its outbox row), and
// they commit with the stored response in one round trip, after it in the same implicit
// transaction, or not at all: a lost claim rolls them back (ErrLeaseLost). Two commits in all,
// as ExecuteOnce.
func (p *Postgres) ExecuteOnceTx(ctx context.Context, key string, fp []byte, fn func(context.Context, *pgx.Batch) ([]byte, error)) (Result, error) {
	return p.execute(ctx, key, fp, fn, true)
}

func (p *Postgres) execute(ctx context.Context, key string, fp []byte, fn func(context.Context, *pgx.Batch) ([]byte, error), inTx bool) (Result, error) {
	if err := validate(key, fp); err != nil {
		return Result{}, err
	}
	owner := newToken()
	for {
		a, err := p.claim(ctx, key, fp, owner)
		if err != nil {
			return Result{}, err
		}
		if !a.claimed {
			switch {
			case string(a.fingerprint) != string(fp):
				return Result{}, ErrKeyReuse
			case a.recoveryPoint == "finished":
				return Result{Value: a.response, Replay: true}, nil
			case !a.expired:
				return Result{}, ErrInProgress
			}
			tag, err := p.pool.Exec(ctx, "take_over", key, owner, p.lease.Seconds())
			if err != nil {
				return Result{}, err
			}
			if tag.RowsAffected() == 0 {
				continue // finished or taken by another retry meanwhile: read it again
			}
		}
		return p.run(ctx, key, owner, fn, inTx)
	}
}

// claim runs the claim statement. It returns no row when the key's row was inserted by a
// transaction that committed after the statement's snapshot was taken (ON CONFLICT waited for
// it, the SELECT cannot see it): the next statement sees it, so it asks again.
func (p *Postgres) claim(ctx context.Context, key string, fp []byte, owner string) (claimAnswer, error) {
	for {
		var a claimAnswer
		err := p.pool.QueryRow(ctx, "claim", key, fp, owner, p.lease.Seconds()).
			Scan(&a.claimed, &a.fingerprint, &a.recoveryPoint, &a.response, &a.expired)
		if !errors.Is(err, pgx.ErrNoRows) {
			return a, err
		}
		if err := ctx.Err(); err != nil {
			return a, err
		}
	}
}

func (p *Postgres) run(ctx context.Context, key, owner string, fn func(context.Context, *pgx.Batch) ([]byte, error), inTx bool) (Result, error) {
	var writes *pgx.Batch
	if inTx {
		writes = &pgx.Batch{}
	}
	value, err := fn(ctx, writes)
	if err != nil {
		// Its own context: the caller's may be what failed, and the key must not stay locked.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, relErr := p.pool.Exec(rctx, "release", key, owner); relErr != nil {
			err = errors.Join(err, fmt.Errorf("release %s: %w", key, relErr))
		}
		return Result{}, err
	}
	if inTx {
		b := &pgx.Batch{}
		b.Queue("complete_or_fail", key, owner, value)
		b.QueuedQueries = append(b.QueuedQueries, writes.QueuedQueries...)
		err := p.pool.SendBatch(ctx, b).Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.DivisionByZero {
			return Result{}, ErrLeaseLost
		}
		if err != nil {
			return Result{}, err
		}
		return Result{Value: value}, nil
	}
	tag, err := p.pool.Exec(ctx, "complete", key, owner, value)
	if err != nil {
		return Result{}, err
	}
	if tag.RowsAffected() == 0 {
		return Result{}, ErrLeaseLost
	}
	return Result{Value: value}, nil
}

// pgerrcode names the one SQLSTATE this file tests for.
var pgerrcode = struct{ DivisionByZero string }{DivisionByZero: "22012"}

// QueueOutbox queues the outbox's producer-side writes on b: the business row and its outbox
// row, for InsertWithOutbox or the run of ExecuteOnceTx.
func QueueOutbox(b *pgx.Batch, id string, body []byte, eventType string, payload []byte) {
	b.Queue("order_insert", id, body)
	b.Queue("outbox_insert", id, eventType, payload)
}

// Probe reads what the server says of its durability and replication.
func (p *Postgres) Probe(ctx context.Context) (Server, error) {
	var (
		version, fsync, syncCommit, syncMethod, fpw, syncNames string
		standbys                                               int
	)
	err := p.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit'), current_setting('wal_sync_method'), current_setting('full_page_writes'),
		current_setting('synchronous_standby_names'), (SELECT count(*) FROM pg_stat_replication)::int`).
		Scan(&version, &fsync, &syncCommit, &syncMethod, &fpw, &syncNames, &standbys)
	if err != nil {
		return Server{}, fmt.Errorf("probe postgres: %w", err)
	}
	s := Server{Store: "postgres", Version: strings.Fields(version)[0],
		Durability: fmt.Sprintf("fsync %s, synchronous_commit %s (%s), full_page_writes %s", fsync, syncCommit, syncMethod, fpw)}
	switch {
	case standbys == 0:
		s.Replication = "1 node, no standby"
	case syncNames == "":
		s.Replication = fmt.Sprintf("primary + %d async standby(s)", standbys)
	default:
		s.Replication = fmt.Sprintf("primary + %d standby(s), synchronous_standby_names %s", standbys, syncNames)
	}
	return s, nil
}

// validIdentifier accepts the unquoted Postgres identifiers a schema name needs.
func validIdentifier(s string) bool {
	if s == "" || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
