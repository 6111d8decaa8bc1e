package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/enumname"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/schema"
)

// Guard makes an at-least-once consumer process each message once: it claims the message with
// a lightweight transaction, runs the handler under a renewed lease, and marks the message
// processed only when the handler succeeded. For the scopes declared with Own, a message its
// warm pre-check knows to be new takes lwt's fast path instead: the handler runs without a claim
// and the message is recorded with a plain write. A Guard is safe for concurrent use.
type Guard struct {
	session                *gocql.Session
	store                  *lwt.Store
	batch                  *lwt.BatchStore // ProcessBatch's records
	cfg                    config
	listScope              string // the hour-bucketed index of earlier releases, still read
	listWindow             string // the ids of one partition of the bucketed table, for warm-ups
	insertIndex, listIndex string // the windowed by-scope index
	selectLayouts          string
	insertLayout           string
	layouts                layoutCache
	clock                  *clock.Meter // nil under WithoutClockCheck
}

// Handler processes one message. On the LWT path its ctx is canceled if the guard loses the
// message's lease, and lwt.ClaimFromContext(ctx) gives the claim's fencing token for downstream
// writes. On the fast path there is no claim (ClaimFromContext reports false) and no lease: the
// ownership of the scope is what keeps other processes away.
type Handler func(ctx context.Context, m Message) error

// Outcome says what Process did with a message.
type Outcome int

const (
	// Processed: the handler ran now and succeeded. Acknowledge the message.
	Processed Outcome = iota + 1
	// Duplicate: an earlier delivery was processed; the handler did not run. Acknowledge it.
	Duplicate
	// InProgress: another consumer holds the message (error lwt.ErrInProgress). Do not
	// acknowledge; a redelivery after its lease will find it processed or claim it.
	InProgress
	// Failed: the handler (or the store) failed; the message is left for redelivery.
	Failed
	// Poison: the message used up its attempts (error *PoisonError). Dead-letter it.
	Poison
)

var outcomeNames = [...]string{"", "processed", "duplicate", "in progress", "failed", "poison"}

// String names the outcome.
func (o Outcome) String() string {
	return enumname.Of(o, "Outcome", outcomeNames[:]...)
}

// New returns a strict guard over session: every message goes through the claim LWT until
// a scope is declared with Own. The tables must exist (schema.Apply creates them).
func New(session *gocql.Session, opts ...Option) (*Guard, error) {
	cfg, err := newConfig(session == nil, opts)
	if err != nil {
		return nil, err
	}
	meter, err := cfg.measureClock(session) // first: the stores get the cluster's clock
	if err != nil {
		return nil, err
	}
	byScope, err := schema.QualifiedName(cfg.Keyspace, cfg.byScope)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	var bucketed, layouts, index string
	for _, t := range []struct {
		q    *string
		name string
	}{{&bucketed, cfg.bucketed}, {&layouts, cfg.layouts}, {&index, cfg.index}} {
		if *t.q, err = schema.QualifiedName(cfg.Keyspace, t.name); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
	}
	storeOpts := []lwt.Option{lwt.WithRetention(cfg.retention), lwt.WithLease(cfg.lease),
		lwt.WithSerialConsistency(cfg.Serial), lwt.WithConsistency(cfg.Consistency), lwt.WithClock(cfg.Now)}
	if cfg.Observer != nil {
		storeOpts = append(storeOpts, lwt.WithObserver(cfg.Observer))
	}
	batch, err := lwt.NewBatchStore(session, lwt.BatchTable{Keyspace: cfg.Keyspace, Name: cfg.bucketed,
		PartitionColumns: []string{"consumer_group", "topic", "partition", "window_start", "bucket"}, KeyColumn: "message_id"},
		storeOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	g := &Guard{
		session: session, batch: batch, cfg: cfg, clock: meter,
		listScope: "SELECT message_id FROM " + byScope + " WHERE consumer_group = ? AND topic = ? AND partition = ? AND hour = ?",
		listWindow: "SELECT message_id FROM " + bucketed +
			" WHERE consumer_group = ? AND topic = ? AND partition = ? AND window_start = ? AND bucket = ?",
		insertIndex: "INSERT INTO " + index +
			" (consumer_group, topic, partition, window_start, bucket, message_id) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?",
		listIndex: "SELECT message_id FROM " + index +
			" WHERE consumer_group = ? AND topic = ? AND partition = ? AND window_start = ? AND bucket = ?",
		selectLayouts: "SELECT since, window_seconds, buckets, recorded_at FROM " + layouts + " WHERE consumer_group = ?",
		insertLayout: "INSERT INTO " + layouts +
			" (consumer_group, since, window_seconds, buckets, recorded_at) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
		layouts: layoutCache{groups: map[string]*groupLayouts{}, proposed: map[string]bool{}},
	}
	table := lwt.Table{Keyspace: cfg.Keyspace, Name: cfg.records,
		KeyColumns: []string{"consumer_group", "topic", "partition", "message_id"}, CompletionColumns: cfg.completionCols}
	// A fast-path message with a time is recorded in the bucketed table, where its record is
	// also its scope's index (see placeFast).
	g.store, err = lwt.NewStore(session, table, storeOptions(storeOpts, cfg.ownership, lwt.WithRecorder(g.placeFast))...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return g, nil
}

// key is m's record key in processed_messages; its scope (all values but the last) is what Own
// takes.
func (m Message) key() lwt.Key { return lwt.Key{m.Group, m.Topic, m.Partition, m.ID} }

func (sc Scope) key() lwt.Key { return lwt.Key{sc.Group, sc.Topic, sc.Partition} }

// handlerError marks an error as the handler's own, so Process can tell it from the store's.
type handlerError struct{ err error }

// Error describes the error.
func (e *handlerError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *handlerError) Unwrap() error { return e.err }

// Process runs handler for m unless m was already processed in its scope. A nil error means
// the message's effect is done: acknowledge it. Otherwise the outcome says what to do:
// InProgress and Failed leave the message for redelivery, Poison asks to dead-letter it.
// Bad input gives ErrInvalidMessage, ErrPayloadTooLarge or ErrInvalidOption (a nil handler)
// before anything is stored, and ErrClockOffset (outcome Failed) while the guard's offset from
// the cluster's clock is not known well enough (see WithClock). A delivery of an id that this
// guard is already processing gets InProgress at once. Errors that mean a write may or may not have applied match
// lwt.ErrOutcomeUnknown.
func (g *Guard) Process(ctx context.Context, m Message, handler Handler) (Outcome, error) {
	if err := g.checkCall(ctx); err != nil {
		return 0, err
	}
	if err := g.admissible(ctx, m, handler); err != nil {
		return Failed, err
	}
	var opts []lwt.CallOption
	if m.Payload != nil {
		opts = append(opts, lwt.WithRequest(m.Payload))
	}
	timed := !m.Time.IsZero()
	if timed {
		opts = append(opts, lwt.WithTime(m.Time))
		// A time further ahead than the skew has no layout yet that stays put (see
		// LayoutSwitchDelay): such a message is not looked up in the bucketed table, which
		// ProcessBatch and the fast path (both refuse it) have not written it to.
		timed = !m.Time.After(g.cfg.Now().Add(lwt.MaxClockSkew))
	}
	// The by-scope index row is written while the claim is in flight rather than after it, so
	// a new message pays one round trip less, and the handler waits for it: the index holds
	// every id whose handler ran on the LWT path, so a pre-check warmed from it may know ids that
	// were never processed (costing an LWT), but never misses one that was. A duplicate writes
	// the row again, which is harmless. A message with a time in an owned scope skips it: on the
	// fast path its record in the bucketed table is its index (placeFast), and on the LWT path,
	// rarer there, the row is written after the claim.
	idx := &indexWrite{g: g, ctx: ctx, m: m}
	if !timed || !g.store.Owns(m.Scope.key()) {
		idx.start()
	}
	res, err := g.store.ExecuteOnce(ctx, m.key(), func(ctx context.Context) ([]byte, error) {
		_, claimed := lwt.ClaimFromContext(ctx)
		switch {
		case timed && !claimed:
			return nil, g.run(ctx, m, handler)
		case timed:
			idx.start()
			done, err := g.inBucketed(ctx, m)
			if ierr := idx.wait(); ierr != nil || err != nil || done {
				return fastRecorded, errors.Join(ierr, err)
			}
		default:
			if err := idx.wait(); err != nil {
				return nil, err
			}
		}
		return nil, g.run(ctx, m, handler)
	}, opts...)
	idx.wait() // the write never outlives Process
	switch {
	case err != nil:
		return g.failure(m, err)
	case res.Replay || bytes.Equal(res.Value, fastRecorded):
		return Duplicate, nil
	}
	return Processed, nil
}

// admissible checks what Process needs before it stores anything: a valid message, a handler,
// and the guard's clock, by which the index row's window, the fast path's vouching and the
// layout are judged.
func (g *Guard) admissible(ctx context.Context, m Message, handler Handler) error {
	if err := m.validate(g.cfg.maxPayload); err != nil {
		return err
	}
	if handler == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidOption)
	}
	return g.checkClock(ctx)
}

// indexWrite is the by-scope index write of one Process call, started at most once.
type indexWrite struct {
	g    *Guard
	ctx  context.Context
	m    Message
	done chan error
	err  error
	got  bool
}

func (w *indexWrite) start() {
	if w.done == nil {
		w.done = make(chan error, 1)
		go func() { w.done <- w.g.index(w.ctx, w.m) }()
	}
}

// wait returns the write's error; nil if it was never started.
func (w *indexWrite) wait() error {
	if w.done != nil && !w.got {
		w.err, w.got = <-w.done, true
	}
	return w.err
}

// index writes m's row in the by-scope index, in the window and bucket that its group's layout
// gives it now.
func (g *Guard) index(ctx context.Context, m Message) error {
	now := g.cfg.Now()
	l, err := g.layoutOf(ctx, m.Group, now)
	if err != nil {
		return fmt.Errorf("guard: index %q by scope: %w", m.ID, err)
	}
	start, bucket := l.place(now.Unix(), m.ID)
	err = g.session.Query(g.insertIndex, m.Group, m.Topic, m.Partition, start, bucket, m.ID,
		int(g.cfg.retention/time.Second)).WithContext(ctx).Consistency(g.cfg.Consistency).Idempotent(true).Exec()
	if err != nil {
		return fmt.Errorf("guard: index %q by scope: %w", m.ID, err)
	}
	return nil
}

// run is the handler's part of Process, after the by-scope index row is written.
func (g *Guard) run(ctx context.Context, m Message, handler Handler) error {
	claim, ok := lwt.ClaimFromContext(ctx)
	if ok && claim.Attempts > g.cfg.maxAttempts {
		last := ""
		if claim.Previous != nil {
			last = string(claim.Previous.Result)
		}
		return lwt.Permanent(fmt.Errorf("%d attempts used; last error: %s", claim.Attempts-1, last))
	}
	if err := handler(ctx, m); err != nil {
		if ok && claim.Attempts >= g.cfg.maxAttempts {
			return lwt.Permanent(&handlerError{err})
		}
		return &handlerError{err}
	}
	return nil
}

// failure maps an ExecuteOnce error to an outcome and this package's errors; lwt's sentinels
// stay reachable through errors.Is.
func (g *Guard) failure(m Message, err error) (Outcome, error) {
	var fe *lwt.FailureError
	var he *handlerError
	switch {
	case errors.As(err, &fe):
		pe := &PoisonError{LastError: fe.Message}
		if errors.As(err, &he) {
			pe.Err = he.err
			pe.Attempts = g.cfg.maxAttempts
		}
		return Poison, pe
	case errors.As(err, &he):
		return Failed, err
	case errors.Is(err, lwt.ErrInProgress):
		return InProgress, fmt.Errorf("guard: %q: %w", m.ID, err)
	case errors.Is(err, lwt.ErrKeyReuse):
		return Failed, fmt.Errorf("%w: %q", ErrMessageReuse, m.ID)
	case errors.Is(err, lwt.ErrInvalidKey):
		return Failed, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return Failed, fmt.Errorf("guard: process %q: %w", m.ID, err)
}

// Stats returns a snapshot of the guard's counters: its lwt store's, fast path included.
func (g *Guard) Stats() lwt.Stats {
	if g == nil {
		return lwt.Stats{}
	}
	return g.store.Stats()
}

// checkCall refuses a call on a nil *Guard or with a nil context (lwt.ErrInvalidArgument).
func (g *Guard) checkCall(ctx context.Context) error {
	return argcheck.Call(lwt.ErrInvalidArgument, "*guard.Guard", g == nil, ctx)
}

// storeOptions are the message store's options: those it shares with the batch store, then its
// own (the ownership's and the fast path's recorder), which the batch store does not take.
func storeOptions(shared []lwt.Option, own []lwt.StoreOption, more ...lwt.StoreOption) []lwt.StoreOption {
	out := make([]lwt.StoreOption, 0, len(shared)+len(own)+len(more))
	for _, o := range shared {
		out = append(out, o)
	}
	return append(append(out, own...), more...)
}
