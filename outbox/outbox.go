package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Outbox stages events in claimed runs of an lwt.Store built over Table. It is safe for
// concurrent use and starts no goroutines.
type Outbox struct {
	session *gocql.Session
	cfg     config
	insert  string // the intent of an operation's run
	// insertRecord is the intent of a run on another table (a guard's message), which names it.
	insertRecord string
	seal         string // the copy of a run's events, written when its completion is sealed
	layout       *layoutGuard

	// arrive and arriveRecord write the intent's arrival, by which a relay finds it (see writeIntent).
	arrive, arriveRecord string
}

// New returns an Outbox over session. The tables of schema/cql/010_outbox.cql must exist; a
// guard's handlers stage events once 012_guard_outbox.cql is applied too.
func New(session *gocql.Session, opts ...StagerOption) (*Outbox, error) {
	cfg, err := newConfig(session == nil, optcheck.Unwrap(opts, StagerOption.stagerOption))
	if err != nil {
		return nil, err
	}
	if err := cfg.measureClock(session, "outbox stager"); err != nil {
		return nil, err
	}
	intents, arrivals := cfg.q.intents, cfg.q.arrivals
	return &Outbox{session: session, cfg: cfg, layout: newLayoutGuard(cfg),
		insert:       "INSERT INTO " + intents + " (bucket, shard, namespace, key, fence, owner, staged_at, expires_at, order_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
		insertRecord: "INSERT INTO " + intents + " (bucket, shard, namespace, key, fence, owner, staged_at, expires_at, record, order_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
		seal:         "UPDATE " + intents + " USING TTL ? SET events = ? WHERE bucket = ? AND shard = ? AND namespace = ? AND key = ? AND fence = ?",
		arrive:       "INSERT INTO " + arrivals + " (bucket, shard, namespace, key, fence, owner, staged_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
		arriveRecord: "INSERT INTO " + arrivals + " (bucket, shard, namespace, key, fence, owner, staged_at, expires_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?",
	}, nil
}

// Clock returns what the stager knows of its clock: its offset from the cluster's, the bound,
// the measurement's age, and the refusals (ErrClockOffset). Zero under WithoutClockCheck.
func (o *Outbox) Clock() clock.Reading {
	if o == nil {
		return clock.Reading{}
	}
	return o.cfg.clockReading()
}

// Table is lwt.IdempotencyKeys(keyspace) with the outbox column declared as a completion
// column: build the lwt.Store of the runs that stage events (and httpidem's) over it.
func Table(keyspace string) lwt.Table {
	t := lwt.IdempotencyKeys(keyspace)
	t.CompletionColumns = []string{ColumnName}
	return t
}

// Stage adds events to the run whose ctx this is: the function passed to ExecuteOnce, an
// httpidem handler (r.Context()), a handler of guard.Guard.Process on a guard built with
// guard.WithCompletionColumns(ColumnName), or anything they call with that ctx. The events are committed
// in the same conditional write that stores the run's result, or not at all: if the run fails,
// is released, or loses its lease, nothing is published. The first Stage of a run writes the
// run's intent row (one plain write) so the relay will look for the commit. A run of
// lwt.WithRepeatableFunction has no effect before its commit, so its intent is written with
// the copy of its events just before the commit (one plain write for both, not two), and the
// errors of that write, ErrIntentLate among them, are its ExecuteOnce's.
//
// Under WithKeyOrder every event of a run must carry the same key (ErrMixedKeys otherwise), the
// run's intent goes in the shard of that key, and a Stage of no events stages nothing: the run's
// first event gives its key.
//
// The intent is bucketed by the cluster's time: the stager's clock plus its offset from a
// coordinator's clock, measured at its first Stage and each minute after. While that offset is
// not known within an eighth of the horizon, Stage refuses with ErrClockOffset and writes
// nothing (WithoutClockCheck turns the measuring off, for tests with a fake clock).
//
// Errors: ErrNoRun (ErrNoCompletion under a claim that no completion of ExecuteOnce ends, such
// as guard.Guard.ProcessBatch's), ErrUnsupportedKey, ErrInvalidEvent (ErrMixedKeys), ErrLayoutMismatch,
// ErrIntentLate, ErrClockOffset, or the driver's error of the intent write. Return them from the run.
// ErrInvalidEvent is marked lwt.Permanent: the same events would be refused on every retry,
// so the run is recorded FAILED and replayed, whether it returns the error or not. After any
// other failed Stage a run that goes on to commit has its completion refused (ErrNoIntent)
// and is released, so a retry runs it again.
func (o *Outbox) Stage(ctx context.Context, events ...Event) error {
	if err := argcheck.Call(ErrInvalidOption, "Outbox", o == nil, ctx); err != nil {
		return err
	}
	comp, ok := lwt.CompletionFromContext(ctx)
	claim, ok2 := lwt.ClaimFromContext(ctx)
	switch {
	case ok2 && !ok:
		return ErrNoCompletion
	case !ok || !ok2:
		return ErrNoRun
	}
	rec, err := o.cfg.recordOf(comp.Table(), claim.Key)
	if err != nil {
		return err
	}
	if o.cfg.keyOrder && len(events) == 0 {
		return nil // no key yet to place the intent by: the first event's Stage writes it
	}
	v, err := comp.LoadOrStore(ColumnName, &staged{o: o, rec: rec, claim: *claim})
	if err != nil {
		// The usual cause: the store was built on lwt.IdempotencyKeys, which lacks the column.
		return fmt.Errorf("%w: %w: build the store with lwt.NewStore(session, outbox.Table(keyspace)) "+
			"(a guard: guard.WithCompletionColumns(outbox.ColumnName))", ErrNoRun, err)
	}
	s := v.(*staged)
	for i, e := range events {
		if err := e.validate(); err != nil {
			return s.refuse(fmt.Errorf("event %d: %w", i, err))
		}
	}
	return s.add(ctx, events)
}

// shardOf is the shard of the operation (namespace, key).
func shardOf(namespace, key string, shards int) int {
	h := xxhash.New()
	_, _ = h.WriteString(namespace)
	_, _ = h.Write([]byte{0})
	_, _ = h.WriteString(key)
	return int(h.Sum64() % uint64(shards))
}

// staged is a run's events: the value of its outbox completion cell.
type staged struct {
	o        *Outbox
	rec      record
	claim    lwt.Claim
	mu       sync.Mutex
	events   []Event
	size     int
	intent   bool
	owed     bool // a repeatable run's Stage was taken: CellValue writes the intent (see add)
	stagedAt time.Time
	// expiresAt is the record's expiry on the cluster's clock, as the intent stores it.
	expiresAt time.Time
	// refused is the first refusal of this run's events: its completion fails permanently.
	refused error
	// Under WithKeyOrder: the key every event of the run carries, once its first event is staged.
	orderKey string
	keyTaken bool
}

// refuse records a refusal of the run's events and returns it, marked permanent.
func (s *staged) refuse(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = err
	}
	return lwt.Permanent(err)
}

func (s *staged) add(ctx context.Context, events []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	refuse := func(err error) error {
		if s.refused == nil {
			s.refused = err
		}
		return lwt.Permanent(err)
	}
	if len(s.events)+len(events) > MaxEvents {
		return refuse(fmt.Errorf("%w: %d events, limit %d", ErrInvalidEvent, len(s.events)+len(events), MaxEvents))
	}
	size := s.size
	for _, e := range events {
		size += len(e.Type) + len(e.Key) + len(e.Payload)*4/3 + 64
		for k, v := range e.Headers {
			size += len(k) + len(v) + 8
		}
	}
	if size > s.o.cfg.maxSize {
		return refuse(fmt.Errorf("%w: about %d bytes staged, limit %d", ErrInvalidEvent, size, s.o.cfg.maxSize))
	}
	if err := s.takeKey(events); err != nil {
		return refuse(err)
	}
	switch {
	case s.intent:
	case s.repeatable():
		// The run has no effect before its commit, so its intent waits for it: CellValue
		// writes it with the events' copy, in one write, just before the commit is sent.
		s.owed = true
	default:
		if _, err := s.writeIntent(ctx, false); err != nil {
			return err
		}
	}
	s.events = append(s.events, events...)
	s.size = size
	return nil
}

// repeatable reports whether the run is one of lwt.WithRepeatableFunction: no claim, and no
// record until its commit.
func (s *staged) repeatable() bool { return !s.claim.CommitBy.IsZero() }

// writeIntent writes the run's intent row in the bucket of now; with seal, also the copy of the
// events staged so far, which it returns encoded (the completion's cell). It must land before a
// relay closes that bucket: a write that took more than half the horizon may not have, so it
// fails.
func (s *staged) writeIntent(ctx context.Context, seal bool) ([]byte, error) {
	cfg := s.o.cfg
	// The bucket is the cluster's time's, not this stager's clock's, which may be minutes off
	// the relays': a time not known well enough refuses the run before anything is written.
	if _, err := cfg.checkClock(ctx); err != nil {
		return nil, err
	}
	if err := s.o.layout.ensure(ctx, s.o.session, &cfg, true, false); err != nil {
		return nil, err
	}
	start := time.Now() // monotonic: the writer's own elapsed time, whatever its wall clock says
	now, local := cfg.now(), cfg.local()
	// A run of lwt.WithRepeatableFunction has no record until it commits, and the relay waits
	// for that record a bounded time after staging (see settle): the commit must come within it.
	// Its deadline is the store's, on this component's clock.
	if s.repeatable() && s.claim.CommitBy.After(local.Add(cfg.horizon)) {
		return nil, fmt.Errorf("%w: the repeatable run may commit until %v, more than the horizon (%v) after staging: give its store a lease of at most the horizon",
			ErrIntentLate, s.claim.CommitBy.Sub(local).Round(time.Millisecond), cfg.horizon)
	}
	// The record expires by its TTL, which the store computed on this component's clock: the
	// relay compares the expiry with the cluster's time.
	expires := s.claim.ExpiresAt
	if !expires.IsZero() {
		expires = expires.Add(now.Sub(local))
	}
	stmt, arrive, args := s.o.insert, s.o.arrive, []any{cfg.bucketOf(now), s.shard(), s.rec.namespace, s.rec.key,
		s.claim.Fence, s.claim.Owner, now, expires}
	if s.rec.table != "" {
		stmt, arrive, args = s.o.insertRecord, s.o.arriveRecord, append(args, s.rec.table)
	}
	// The intent and its arrival share the keyspace and the partition key (bucket, shard), so
	// the node makes one mutation of this batch (its BatchUpdatesCollector groups updates by
	// keyspace and key, whatever their tables): one commit log entry per replica, one round
	// trip. The arrival only shows a relay the intent early: one that did not land is found
	// by the bucket's last sweep, which reads the intents. The events' copy, when it comes
	// with the intent, is a cell of the intent's own row.
	ttl := cfg.ttlUntil(cfg.rowExpiry(expires))
	batch := s.o.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	batch.Cons = cfg.consistency
	batch.Entries = append(batch.Entries,
		gocql.BatchEntry{Stmt: stmt, Args: append(args, s.orderKeyValue(), ttl), Idempotent: true},
		gocql.BatchEntry{Stmt: arrive, Args: append(args[:len(args):len(args)], cfg.arrivalTTL()), Idempotent: true})
	var sealed []byte
	if seal {
		var err error
		if sealed, err = encodeCell(cell{StagedAt: now, Events: s.events}); err != nil {
			return nil, err
		}
		batch.Entries = append(batch.Entries, gocql.BatchEntry{Stmt: s.o.seal,
			Args: []any{ttl, sealed, cfg.bucketOf(now), s.shard(), s.rec.namespace, s.rec.key, s.claim.Fence}, Idempotent: true})
	}
	if err := s.o.session.ExecuteBatch(batch); err != nil {
		return nil, fmt.Errorf("outbox: write intent: %w", err)
	}
	if elapsed := time.Since(start); elapsed > cfg.horizon/2 {
		return nil, fmt.Errorf("%w: %v, limit %v", ErrIntentLate, elapsed, cfg.horizon/2)
	}
	s.intent, s.stagedAt, s.expiresAt = true, now, expires
	return sealed, nil
}

// sealTimeout bounds the write of the events' copy when a run seals its completion.
const sealTimeout = 10 * time.Second

// CellValue encodes the staged events for the completion (lwt.CellValue). It first copies them
// to the intent row (a repeatable run's intent is written here, with the copy): if the record
// expires before a relay settles the intent, the copy is parked rather than lost, and an intent
// without one never sent its completion, so the relay may drop it. A refusal of the run's events
// fails the run permanently.
func (s *staged) CellValue() (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused != nil {
		return nil, lwt.Permanent(s.refused)
	}
	if !s.intent && !s.owed {
		if len(s.events) == 0 {
			return nil, errors.Join(ErrNoIntent, errors.New("outbox: a Stage of this run failed"))
		}
		return nil, ErrNoIntent
	}
	cfg := s.o.cfg
	ctx, cancel := context.WithTimeout(context.Background(), sealTimeout)
	defer cancel()
	if !s.intent { // a repeatable run's: the intent and the copy in one write
		b, err := s.writeIntent(ctx, true)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	b, err := encodeCell(cell{StagedAt: s.stagedAt, Events: s.events})
	if err != nil {
		return nil, err
	}
	err = s.o.session.Query(s.o.seal, cfg.ttlUntil(cfg.rowExpiry(s.expiresAt)), b, cfg.bucketOf(s.stagedAt),
		s.shard(), s.rec.namespace, s.rec.key, s.claim.Fence).
		WithContext(ctx).Consistency(cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return nil, fmt.Errorf("outbox: copy the events to the intent: %w", err)
	}
	return b, nil
}
