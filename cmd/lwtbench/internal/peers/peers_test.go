package peers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
)

// TestMain fails the run when a goroutine that these tests started outlives them.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// The servers come from the environment, as `make test` sets it (scripts/peers/*.sh start
// them); a missing one fails the test, never skips it.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("PEERS_POSTGRES_URL")
	if u == "" {
		t.Fatal("PEERS_POSTGRES_URL is unset: run make test, or scripts/peers/postgres.sh up and " +
			"export PEERS_POSTGRES_URL=$(scripts/peers/postgres.sh url)")
	}
	return u
}

func redisAddr(t *testing.T) string {
	t.Helper()
	a := os.Getenv("PEERS_REDIS_ADDR")
	if a == "" {
		t.Fatal("PEERS_REDIS_ADDR is unset: run make test, or scripts/peers/redis.sh up and " +
			"export PEERS_REDIS_ADDR=$(scripts/peers/redis.sh addr)")
	}
	return a
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func openPostgres(t *testing.T) *Postgres {
	t.Helper()
	ctx := testContext(t)
	p, err := OpenPostgres(ctx, postgresURL(t), randomName("peers_test_"), 8)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, p.DropSchema(context.Background()))
		p.Close()
	})
	return p
}

func openRedis(t *testing.T) *Redis {
	t.Helper()
	r, err := OpenRedis(testContext(t), redisAddr(t), 8, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// design is what both exactly-once designs offer.
type design interface {
	ExecuteOnce(ctx context.Context, key string, fp []byte, fn func(context.Context) ([]byte, error)) (Result, error)
}

func fingerprint(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func TestPostgresExactlyOnce(t *testing.T) { testExactlyOnce(t, openPostgres(t)) }

func TestRedisExactlyOnce(t *testing.T) { testExactlyOnce(t, openRedis(t)) }

// TestPostgresExactlyOnceTx runs the same checks on ExecuteOnceTx, whose runs write an order
// and its outbox row in the completion's transaction, then checks that exactly one of each
// committed per key.
func TestPostgresExactlyOnceTx(t *testing.T) {
	p := openPostgres(t)
	testExactlyOnce(t, pgTx{p})
	var orders, events, finished int
	require.NoError(t, p.pool.QueryRow(testContext(t), `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox),
		(SELECT count(*) FROM idempotency_keys WHERE recovery_point = 'finished')`).Scan(&orders, &events, &finished))
	assert.Equal(t, finished, orders, "one order per finished key")
	assert.Equal(t, finished, events, "one outbox row per finished key")
}

// pgTx is ExecuteOnceTx as a design: the run's result becomes an order and its event.
type pgTx struct{ *Postgres }

func (p pgTx) ExecuteOnce(ctx context.Context, key string, fp []byte, fn func(context.Context) ([]byte, error)) (Result, error) {
	return p.ExecuteOnceTx(ctx, key, fp, func(ctx context.Context, b *pgx.Batch) ([]byte, error) {
		v, err := fn(ctx)
		if err == nil {
			QueueOutbox(b, key, v, "order.placed", v)
		}
		return v, err
	})
}

func TestPostgresLostClaimRollsBackTheRunsWrites(t *testing.T) {
	ctx := testContext(t)
	p := openPostgres(t)
	fp := fingerprint("r")
	_, err := p.ExecuteOnceTx(ctx, "stolen", fp, func(ctx context.Context, b *pgx.Batch) ([]byte, error) {
		// Another attempt takes the claim over mid-run (as after a pause past the lease).
		_, err := p.pool.Exec(ctx, `UPDATE idempotency_keys SET owner = 'other' WHERE key = 'stolen'`)
		QueueOutbox(b, "stolen", []byte("o"), "order.placed", []byte("e"))
		return []byte("v"), err
	})
	require.ErrorIs(t, err, ErrLeaseLost)
	var orders, events int
	require.NoError(t, p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox)`).Scan(&orders, &events))
	assert.Zero(t, orders+events, "the fenced-off run's writes rolled back with its completion")
}

func testExactlyOnce(t *testing.T, d design) {
	result := []byte(`{"status":201}`)
	fp := fingerprint("request")
	t.Run("a new key runs once under 32 goroutines", func(t *testing.T) {
		ctx := testContext(t)
		key := randomName("new-")
		var (
			runs    atomic.Int32
			release = make(chan struct{})
			wg      sync.WaitGroup
			start   = make(chan struct{})
			answers = make(chan error, 32)
			values  = make(chan Result, 32)
		)
		fn := func(context.Context) ([]byte, error) {
			runs.Add(1)
			<-release // hold the claim until every other attempt has answered
			return result, nil
		}
		for range 32 {
			wg.Go(func() {
				<-start
				res, err := d.ExecuteOnce(ctx, key, fp, fn)
				answers <- err
				if err == nil {
					values <- res
				}
			})
		}
		close(start)
		inProgress := 0
		for inProgress < 31 {
			err := <-answers
			require.ErrorIs(t, err, ErrInProgress, "every attempt but the owner's finds the claim held")
			inProgress++
		}
		close(release)
		wg.Wait()
		require.NoError(t, <-answers)
		owner := <-values
		assert.False(t, owner.Replay)
		assert.Equal(t, result, owner.Value)
		assert.Equal(t, int32(1), runs.Load())

		// Once stored, all 32 at once replay it and none runs.
		var replays atomic.Int32
		for range 32 {
			wg.Go(func() {
				res, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) {
					runs.Add(1)
					return nil, errors.New("ran twice")
				})
				if err == nil && res.Replay && string(res.Value) == string(result) {
					replays.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(32), replays.Load())
		assert.Equal(t, int32(1), runs.Load())
	})
	t.Run("a duplicate replays", func(t *testing.T) {
		ctx := testContext(t)
		key := randomName("dup-")
		first, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) { return result, nil })
		require.NoError(t, err)
		assert.False(t, first.Replay)
		dup, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) {
			t.Error("a duplicate ran")
			return nil, nil
		})
		require.NoError(t, err)
		assert.True(t, dup.Replay)
		assert.Equal(t, result, dup.Value)
	})
	t.Run("a reused key with another request is refused", func(t *testing.T) {
		ctx := testContext(t)
		key := randomName("reuse-")
		_, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) { return result, nil })
		require.NoError(t, err)
		_, err = d.ExecuteOnce(ctx, key, fingerprint("another request"), func(context.Context) ([]byte, error) {
			t.Error("a reused key ran")
			return nil, nil
		})
		assert.ErrorIs(t, err, ErrKeyReuse)
	})
	t.Run("a failed run releases the key", func(t *testing.T) {
		ctx := testContext(t)
		key := randomName("fail-")
		boom := errors.New("boom")
		_, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
		res, err := d.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) { return result, nil })
		require.NoError(t, err)
		assert.False(t, res.Replay, "the retry runs")
	})
	t.Run("bad input is refused", func(t *testing.T) {
		ctx := testContext(t)
		_, err := d.ExecuteOnce(ctx, "", fp, nil)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = d.ExecuteOnce(ctx, "k", []byte("short"), nil)
		assert.ErrorIs(t, err, ErrInvalid)
	})
}

func TestPostgresPlainAndOutbox(t *testing.T) {
	ctx := testContext(t)
	p := openPostgres(t)
	fp := fingerprint("x")
	require.NoError(t, p.Insert(ctx, "k1", fp))
	assert.Error(t, p.Insert(ctx, "k1", fp), "the plain insert's key is its primary key")

	require.NoError(t, p.InsertWithOutbox(ctx, "order-1", []byte("body"), "order.placed", []byte("event")))
	// A second order with the same id fails, and its outbox row goes with it: one transaction.
	assert.Error(t, p.InsertWithOutbox(ctx, "order-1", []byte("again"), "order.placed", []byte("event")))
	var orders, events int
	require.NoError(t, p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox)`).Scan(&orders, &events))
	assert.Equal(t, 1, orders)
	assert.Equal(t, 1, events, "the failed transaction's outbox row was rolled back")
	assert.ErrorIs(t, p.InsertWithOutbox(ctx, "", nil, "t", nil), ErrInvalid)
}

func TestPostgresTakeOverAfterLease(t *testing.T) {
	ctx := testContext(t)
	p := openPostgres(t)
	fp := fingerprint("r")
	// A claim whose run never finished (a crash): insert it as the claim statement would, with a
	// lock taken an hour ago by the server's clock.
	_, err := p.pool.Exec(ctx, `INSERT INTO idempotency_keys (key, fingerprint, owner, locked_at)
		VALUES ('crashed', $1, 'dead-owner', now() - interval '1 hour')`, fp)
	require.NoError(t, err)
	res, err := p.ExecuteOnce(ctx, "crashed", fp, func(context.Context) ([]byte, error) { return []byte("v"), nil })
	require.NoError(t, err, "a lease expired by the server's clock is taken over")
	assert.False(t, res.Replay)
	// The dead owner's late completion is fenced off.
	tag, err := p.pool.Exec(ctx, "complete", "crashed", "dead-owner", []byte("late"))
	require.NoError(t, err)
	assert.Zero(t, tag.RowsAffected())
	res, err = p.ExecuteOnce(ctx, "crashed", fp, nil)
	require.NoError(t, err)
	assert.Equal(t, []byte("v"), res.Value)
}

func TestRedisLostClaimIsFenced(t *testing.T) {
	ctx := testContext(t)
	r := openRedis(t)
	key := randomName("lost-")
	fp := fingerprint("r")
	_, err := r.ExecuteOnce(ctx, key, fp, func(ctx context.Context) ([]byte, error) {
		// The claim expires mid-run (as after a long pause) and a retry claims and finishes.
		require.NoError(t, r.client.Del(ctx, key).Err())
		_, err := r.ExecuteOnce(ctx, key, fp, func(context.Context) ([]byte, error) { return []byte("retry"), nil })
		return []byte("late"), err
	})
	require.ErrorIs(t, err, ErrLeaseLost, "the first run's store is fenced off")
	res, err := r.ExecuteOnce(ctx, key, fp, nil)
	require.NoError(t, err)
	assert.Equal(t, []byte("retry"), res.Value)
	require.NoError(t, r.Set(ctx, randomName("plain-"), []byte("v")))
}

func TestProbes(t *testing.T) {
	ctx := testContext(t)
	pg, err := openPostgres(t).Probe(ctx)
	require.NoError(t, err)
	assert.Equal(t, "postgres", pg.Store)
	assert.Contains(t, pg.Durability, "fsync on, synchronous_commit on")
	assert.Equal(t, "1 node, no standby", pg.Replication)
	rd, err := openRedis(t).Probe(ctx)
	require.NoError(t, err)
	assert.Equal(t, "redis", rd.Store)
	assert.Contains(t, rd.Durability, "appendfsync")
	assert.Equal(t, "1 node, no replica", rd.Replication)
	assert.NotEmpty(t, rd.Version)
}

func TestOpenRefusesBadInput(t *testing.T) {
	ctx := testContext(t)
	_, err := OpenPostgres(ctx, "postgres://x", "Bad-Name", 1)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = OpenRedis(ctx, "127.0.0.1:1", 0, time.Second)
	assert.ErrorIs(t, err, ErrInvalid)
}
