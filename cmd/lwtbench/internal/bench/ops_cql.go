package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/parallel"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/schema"
)

// The three operations below write the same cells of an idempotency_keys row (a claim, as the
// exactly-once executor writes it), so their ratios measure only what the condition costs.

// rowTTL is the retention window the executor's records use by default (24 h).
const rowTTL = 24 * time.Hour

// duplicatePool is how many rows the duplicate operation pre-inserts. Requests spread over them
// so they do not all contend on one partition, as duplicates of distinct requests would not.
const duplicatePool = 256

// errUnexpectedOutcome marks a request that completed but not as its operation expects.
var errUnexpectedOutcome = errors.New("unexpected outcome")

type claimWriter struct {
	name        string
	session     *gocql.Session
	stmt        string
	namespace   string
	fingerprint []byte
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
}

func newClaimWriter(env Env, name string, conditional bool) (*claimWriter, error) {
	table, err := schema.QualifiedName(env.Keyspace, "idempotency_keys")
	if err != nil {
		return nil, err
	}
	cond := ""
	if conditional {
		cond = " IF NOT EXISTS"
	}
	stmt := "INSERT INTO " + table + ` (namespace, key, fingerprint, status, owner, fence,
		lease_until, attempts, created_at, updated_at, expires_at)
		VALUES (?, ?, ?, 'STARTED', ?, 0, ?, 1, ?, ?, ?)` + cond + " USING TTL ?"
	fp := make([]byte, 32) // a SHA-256 sized request fingerprint
	if _, err := rand.Read(fp); err != nil {
		return nil, err
	}
	return &claimWriter{
		name: name, session: env.Session, stmt: stmt, namespace: env.Namespace(name),
		fingerprint: fp, consistency: env.Consistency, serial: env.Serial,
	}, nil
}

func (w *claimWriter) query(key string) *gocql.Query {
	now := time.Now()
	return w.session.Query(w.stmt, w.namespace, key, w.fingerprint, gocql.TimeUUID(),
		now.Add(30*time.Second), now, now, now.Add(rowTTL), int(rowTTL/time.Second)).
		Consistency(w.consistency).
		Idempotent(false) // never re-sent by the driver: an LWT retry is not the same request
}

// cas runs a conditional insert through the library's primitive, as the stores send theirs,
// and reports whether it applied: the client's cost per LWT is the library's.
func (w *claimWriter) cas(ctx context.Context, key string) (bool, error) {
	applied, _, err := cas.Exec(ctx, w.query(key), w.serial)
	return applied, err
}

// Name names the operation in reports.
func (w *claimWriter) Name() string { return w.name }

type plainInsert struct{ *claimWriter }

func newPlainInsert(env Env) (Operation, error) {
	w, err := newClaimWriter(env, Baseline, false)
	return plainInsert{w}, err
}

// Setup prepares the operation before the timed phases.
func (plainInsert) Setup(context.Context) error { return nil }

// Do runs one request.
func (p plainInsert) Do(ctx context.Context, req Request) error {
	return p.query(req.Key()).WithContext(ctx).Exec()
}

type lwtInsert struct{ *claimWriter }

func newLWTInsert(env Env) (Operation, error) {
	w, err := newClaimWriter(env, "lwt-new", true)
	return lwtInsert{w}, err
}

// Setup prepares the operation before the timed phases.
func (lwtInsert) Setup(context.Context) error { return nil }

// Do runs one request.
func (l lwtInsert) Do(ctx context.Context, req Request) error {
	applied, err := l.cas(ctx, req.Key())
	if err == nil && !applied {
		err = fmt.Errorf("%w: IF NOT EXISTS on a new key was rejected", errUnexpectedOutcome)
	}
	return err
}

type lwtDuplicate struct{ *claimWriter }

func newLWTDuplicate(env Env) (Operation, error) {
	w, err := newClaimWriter(env, "lwt-dup", true)
	return lwtDuplicate{w}, err
}

func duplicateKey(i int) string { return fmt.Sprintf("dup-%d", i) }

// poolIndex picks the pool key a duplicate request repeats. A multiplicative step spreads
// consecutive requests of all workers over the pool; the step is odd and the pool a power of
// two, so each worker's requests visit every key.
func poolIndex(req Request) int {
	return (req.Worker*7919 + req.Seq*104729 + req.Phase) % duplicatePool
}

// Setup claims every key of the pool with the same LWT the requests will repeat, so the rows
// and their Paxos state look like those of real first attempts.
func (d lwtDuplicate) Setup(ctx context.Context) error {
	return parallel.ForEach(ctx, duplicatePool, 16, func(ctx context.Context, i int) error {
		_, err := d.cas(ctx, duplicateKey(i))
		return err
	})
}

// Do runs one request.
func (d lwtDuplicate) Do(ctx context.Context, req Request) error {
	applied, err := d.cas(ctx, duplicateKey(poolIndex(req)))
	if err == nil && applied {
		err = fmt.Errorf("%w: IF NOT EXISTS on an existing key was applied", errUnexpectedOutcome)
	}
	return err
}
