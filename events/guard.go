package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/internal/flights"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/schema"
)

// Guard makes an at-least-once consumer process each message once: it claims the message with
// a lightweight transaction, runs the handler under a renewed lease, and marks the message
// processed only when the handler succeeded. For the scopes declared with Own, a message its
// warm pre-check knows to be new takes the fast path instead: the handler runs without a claim
// and the message is recorded with a plain write. A Guard is safe for concurrent use.
type Guard struct {
	session                *gocql.Session
	store                  *lwt.Store
	cfg                    guardConfig
	insertScope, listScope string

	mu    sync.Mutex
	owned map[Scope]*owner // scopes with the fast path on; guarded by mu
	// flights are the deliveries running here, by (scope, id). A delivery of an id already
	// running gets InProgress without a round trip: on the fast path the table holds no row for
	// the id until the handler returns, so only this set keeps a redelivery from running it.
	flights flights.Set[flightKey, Scope]
	stats   guardCounters
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
	// InProgress: another consumer holds the message (error ErrInProgress). Do not
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
	if o > 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// NewGuard returns a strict guard over session: every message goes through the claim LWT.
// The tables must exist (schema.Apply creates them).
func NewGuard(session *gocql.Session, opts ...GuardOption) (*Guard, error) {
	if session == nil {
		return nil, fmt.Errorf("%w: nil session", ErrInvalidOption)
	}
	cfg := defaultGuardConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	byScope, err := schema.QualifiedName(cfg.keyspace, cfg.byScope)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	table := lwt.Table{Keyspace: cfg.keyspace, Name: cfg.table,
		KeyColumns: []string{"consumer_group", "topic", "partition", "message_id"}}
	store, err := lwt.NewStore(session, table, lwt.WithRetention(cfg.retention), lwt.WithLease(cfg.lease),
		lwt.WithSerialConsistency(cfg.serial), lwt.WithCommitConsistency(cfg.consistency))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return &Guard{
		session: session, store: store, cfg: cfg, owned: map[Scope]*owner{},
		insertScope: "INSERT INTO " + byScope + " (consumer_group, topic, partition, hour, message_id) VALUES (?, ?, ?, ?, ?) USING TTL ?",
		listScope:   "SELECT message_id FROM " + byScope + " WHERE consumer_group = ? AND topic = ? AND partition = ? AND hour = ?",
	}, nil
}

// flightKey names one message in the guard's set of running deliveries.
type flightKey struct {
	scope Scope
	id    string
}

// handlerError marks an error as the handler's own, so Process can tell it from the store's.
type handlerError struct{ err error }

// Error describes the error.
func (e *handlerError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *handlerError) Unwrap() error { return e.err }

// Process runs handler for m unless m was already processed in its scope. A nil error means
// the message's effect is done: acknowledge it. Otherwise the outcome says what to do:
// InProgress and Failed leave the message for redelivery, Poison asks to dead-letter it.
// Bad input gives ErrInvalidMessage or ErrPayloadTooLarge before anything is stored. A delivery
// of an id that this guard is already processing gets InProgress at once.
func (g *Guard) Process(ctx context.Context, m Message, handler Handler) (Outcome, error) {
	if err := m.validate(g.cfg.maxPayload); err != nil {
		return Failed, err
	}
	if handler == nil {
		return Failed, fmt.Errorf("%w: nil handler", ErrInvalidOption)
	}
	// Enter before reading the ownership: Own's warm-up waits for the deliveries that entered
	// before it began, and every later one is recorded by the pre-check's Check.
	fk := flightKey{m.Scope, m.ID}
	if running, _ := g.flights.Enter(fk, m.Scope); running {
		g.flights.Leave(fk)
		g.stats.inFlight.Add(1)
		return InProgress, fmt.Errorf("%w: %q is being processed by this guard", ErrInProgress, m.ID)
	}
	defer g.flights.Leave(fk)
	g.mu.Lock()
	o := g.owned[m.Scope]
	g.mu.Unlock()
	if o == nil {
		out, _, err := g.strict(ctx, m, handler)
		return out, err
	}
	a := o.pre.Check(m.ID)
	if a.ClearlyNew() {
		return g.fast(ctx, m, handler, o, a)
	}
	g.stats.lwtPath.Add(1)
	out, tableSaidNew, err := g.strict(ctx, m, handler)
	// Observe only what the table answered: a store error may have left it unknown.
	if a.Verdict == bloom.MaybeSeen && (err == nil || tableSaidNew || out == InProgress || out == Poison) {
		o.pre.Observe(a, tableSaidNew)
		if tableSaidNew {
			g.stats.falsePositives.Add(1)
		}
	}
	return out, err
}

// strict is the LWT path. tableSaidNew reports that the claim created the record: the id had
// no record in the table.
func (g *Guard) strict(ctx context.Context, m Message, handler Handler) (out Outcome, tableSaidNew bool, err error) {
	var opts []lwt.CallOption
	if m.Payload != nil {
		opts = append(opts, lwt.WithRequest(m.Payload))
	}
	key := lwt.Key{m.Group, m.Topic, m.Partition, m.ID}
	// The by-scope index row is written while the claim is in flight rather than after it, so
	// a new message pays one round trip less. The handler still waits for it: a pre-check warmed
	// from the index may then know ids that were never processed (costing an LWT), but never
	// misses one that was. A duplicate writes the row again, which is harmless.
	indexed := make(chan error, 1)
	go func() { indexed <- g.index(ctx, m) }()
	var indexOnce sync.Once
	var indexErr error
	waitIndex := func() error {
		indexOnce.Do(func() { indexErr = <-indexed })
		return indexErr
	}
	defer waitIndex() // the write never outlives Process
	res, err := g.store.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		if c, ok := lwt.ClaimFromContext(ctx); ok && c.Previous == nil && c.Attempts == 1 {
			tableSaidNew = true
		}
		if err := waitIndex(); err != nil {
			return nil, err
		}
		return nil, g.run(ctx, m, handler)
	}, opts...)
	if err != nil {
		out, err = g.failure(m, err)
		return out, tableSaidNew, err
	}
	if res.Replay {
		return Duplicate, false, nil
	}
	return Processed, tableSaidNew, nil
}

// run is the claimed part of Process, after the by-scope index row is written.
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

// failure maps an ExecuteOnce error to an outcome and this package's errors.
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
		return InProgress, fmt.Errorf("%w: %q: %w", ErrInProgress, m.ID, err)
	case errors.Is(err, lwt.ErrKeyReuse):
		return Failed, fmt.Errorf("%w: %q", ErrMessageReuse, m.ID)
	case errors.Is(err, lwt.ErrOutcomeUnknown):
		return Failed, fmt.Errorf("%w: %q: %w", ErrOutcomeUnknown, m.ID, err)
	case errors.Is(err, lwt.ErrInvalidKey):
		return Failed, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return Failed, fmt.Errorf("events: process %q: %w", m.ID, err)
}
