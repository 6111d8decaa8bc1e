package outbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/clock"
)

// Publisher sends messages to a broker. Publish returns nil only when every message is durably
// accepted (for Kafka: acknowledged by all in-sync replicas); the relay marks nothing otherwise
// and sends them again. It is called from one goroutine per Relay at a time.
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, msgs []Message) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, msgs []Message) error { return f(ctx, msgs) }

// Stats counts what a relay's passes did. Every stall shows here (and in the metrics built on
// it) long before it could cost an event: Oldest grows while a shard cannot publish, Attempts
// and Backoff count failed publications, Parked and Expired the events set aside for an
// operator, SlowPublishes a publisher that slows down, Fenced and LeasesLost shards lost.
type Stats struct {
	Shards        int           // shards held after the pass
	Buckets       int           // bucket partitions read
	RowsRead      int           // arrival and intent rows the node returned, settled ones included (the cost of a pass)
	Published     int           // messages published
	Settled       int           // intents marked (published, dropped or parked)
	Dropped       int           // intents whose run did not commit
	Waiting       int           // intents left pending: in flight, backing off, failed, held or unreadable
	Failed        int           // operations whose publication failed in the pass
	Attempts      int           // rejections counted against their operations toward parking (ErrRejected)
	Transient     int           // failed publications not the events' own (timeout, broker away): backed off, never parked
	Backoff       int           // committed intents skipped while their backoff runs
	Held          int           // committed intents held back (WithKeyOrder): an earlier intent of their key is unsettled
	Parked        int           // operations whose events were parked (outbox_parked)
	Expired       int           // of them, parked because their record expired first (ErrCommitUnknown)
	SlowPublishes int           // Publish calls slower than WithSlowPublish
	Fenced        int           // shards lost: to a newer relay, or a lease that ran out or was lost
	LeasesLost    int           // of them, lost because this relay's lease ran out or was lost
	Oldest        time.Duration // the age of the oldest pending intent read (by the cluster's clock)
	// Clock is the relay's offset from the cluster's clock at the pass's start, its bound, its
	// age and the meter's counts (Refusals: passes refused with ErrClockOffset). Zero under
	// WithoutClockCheck.
	Clock clock.Reading
}

func (s *Stats) add(o Stats) {
	s.Buckets += o.Buckets
	s.RowsRead += o.RowsRead
	s.Published += o.Published
	s.Settled += o.Settled
	s.Dropped += o.Dropped
	s.Waiting += o.Waiting
	s.Failed += o.Failed
	s.Attempts += o.Attempts
	s.Transient += o.Transient
	s.Backoff += o.Backoff
	s.Held += o.Held
	s.Parked += o.Parked
	s.Expired += o.Expired
	s.SlowPublishes += o.SlowPublishes
	s.Fenced += o.Fenced
	s.LeasesLost += o.LeasesLost
	s.Oldest = max(s.Oldest, o.Oldest)
	if o.Clock.Measurements > 0 { // the later reading: a gauge, its counts already totals
		s.Clock = o.Clock
	}
}

// Relay finds committed events through the intents index and publishes them at least once,
// marking each intent when its events were accepted. Relays of one name share the shards under
// fenced leases. A Relay is safe for concurrent use, but its passes run one at a time; it starts
// no goroutines (Run blocks its caller).
type Relay struct {
	judge  // the session, the config and the record reads
	pub    Publisher
	leases *lwt.Store
	st     relayStatements
	mu     sync.Mutex // one pass at a time
	held   map[int]*shard
	layout *layoutGuard
	// transient counts the passes in a row whose publications all failed (none accepted): the
	// backoff of a failure that is not the events' own grows with it.
	transient atomic.Int64
	// turn keeps the publisher's calls one at a time (Publisher's contract) while a pass works
	// several shards at once; renewIdle, set for the length of a pass's workAll, renews the
	// leases of the shards no worker holds, for the workers that wait for their turn.
	turn      publisherTurn
	renewIdle func()
}

type relayStatements struct {
	raise, raiseNull, mark, retry, park, readCursor, writeCursor string
	arrivals                                                     string // the arrivals of a partition staged in a time range
}

// NewRelay returns a relay that publishes through pub. The tables of schema/cql/010_outbox.cql
// must exist, with the columns of 012_guard_outbox.cql.
func NewRelay(session *gocql.Session, pub Publisher, opts ...RelayOption) (*Relay, error) {
	cfg, err := newConfig(session == nil || isNil(pub), optcheck.Unwrap(opts, RelayOption.relayOption))
	if err != nil {
		return nil, err
	}
	// Buckets close, arrivals are read and leases judged by the cluster's time (clock.go).
	if err := cfg.measureClock(session, "outbox relay "+cfg.name); err != nil {
		return nil, err
	}
	intents, relays, parked := cfg.q.intents, cfg.q.relays, cfg.q.parked
	j := newJudge(session, cfg)
	layout := newLayoutGuard(cfg)
	// A shard's lease is an exactly-once record of lwt that is never completed: lwt's claim,
	// renewal, server-judged expiry and fencing, kept for a year so its fence never restarts.
	leases, err := lwt.NewStore(session, lwt.Table{Keyspace: cfg.keyspace, Name: cfg.relays, KeyColumns: []string{"relay", "shard"}},
		lwt.WithLease(cfg.lease), lwt.WithRetention(365*24*time.Hour), lwt.WithClock(cfg.now),
		lwt.WithConsistency(cfg.consistency), lwt.WithSerialConsistency(cfg.serial))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	part := " WHERE bucket = ? AND shard = ?"
	return &Relay{judge: j, pub: pub, leases: leases, held: map[int]*shard{}, layout: layout, st: relayStatements{
		raise:     "UPDATE " + intents + " USING TTL ? SET relay_fence = ?" + part + " IF relay_fence < ?",
		raiseNull: "UPDATE " + intents + " USING TTL ? SET relay_fence = ?" + part + " IF relay_fence = null",
		mark: "UPDATE " + intents + " USING TTL ? SET state = ?, settled_at = ?" + part +
			" AND namespace = ? AND key = ? AND fence = ? IF relay_fence = ?",
		retry: "UPDATE " + intents + " USING TTL ? SET committed = true, attempts = ?, next_attempt = ?, last_error = ?, events = ?" + part +
			" AND namespace = ? AND key = ? AND fence = ? IF relay_fence = ?",
		park: "INSERT INTO " + parked + " (intents, shard, namespace, key, fence, owner, record, staged_at, parked_at, reason, attempts, last_error, events)" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		readCursor:  "SELECT shards, frontier, pending FROM " + relays + " WHERE relay = ? AND shard = ?",
		writeCursor: "UPDATE " + relays + " USING TTL ? SET shards = ?, frontier = ?, pending = ? WHERE relay = ? AND shard = ? IF owner = ? AND fence = ? AND status = 'STARTED'",
		arrivals: "SELECT staged_at, namespace, key, fence, owner, record, expires_at, committed FROM " + cfg.q.arrivals +
			part + " AND staged_at > ? AND staged_at <= ?",
	}}, nil
}

// Clock returns what the relay knows of its clock: its offset from the cluster's, the bound,
// the measurement's age, and the passes refused (ErrClockOffset). Zero under WithoutClockCheck.
func (r *Relay) Clock() clock.Reading {
	if r == nil {
		return clock.Reading{}
	}
	return r.cfg.clockReading()
}

// Run makes a pass every poll interval until ctx ends, then gives its shards up so another relay
// takes them at once, and returns ctx.Err(). A pass's error is not fatal: what it left is
// retried on the next pass. onPass, if not nil, sees each pass's stats and error; the shards
// of a pass cut short because ctx ended report no error, since stopping is not a failure and
// what they left is retried by the next relay.
func (r *Relay) Run(ctx context.Context, onPass func(Stats, error)) error {
	if err := argcheck.Call(ErrInvalidOption, "Relay", r == nil, ctx); err != nil {
		return err
	}
	t := time.NewTicker(r.cfg.poll)
	defer t.Stop()
	for {
		st, err := r.Poll(ctx)
		if onPass != nil {
			onPass(st, withoutStop(err, ctx.Err()))
		}
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.Release(rctx)
			cancel()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Poll makes one pass: it claims free shards (up to WithMaxShards), then for each held shard,
// eight shards at a time, reads what arrived in its open buckets since the last pass, its
// pending buckets and the next closed ones, publishes what committed (one Publish call at a
// time), marks it and moves the shard's cursor. Errors of single shards are joined; the shards
// stay held unless fenced.
func (r *Relay) Poll(ctx context.Context) (Stats, error) {
	var total Stats
	if err := argcheck.Call(ErrInvalidOption, "Relay", r == nil, ctx); err != nil {
		return total, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.passable(ctx, &total); err != nil {
		return total, err
	}
	// Every held lease that is due is renewed before each step of the pass (a claim, a shard's
	// work), not once at its start: on a loaded machine one step can take seconds, and a pass
	// over many shards longer than a lease, so leases renewed only at the start ran out while
	// earlier shards were worked, and the relay lost every later shard on every pass. A lease
	// that ran out anyway (a pass that came late) is given up quietly: the shard is claimed
	// again if no other relay took it.
	p := &pass{r: r, total: total, renewed: map[int]bool{}}
	p.renewDue(ctx)
	p.claimFree(ctx)
	p.workHeld(ctx)
	p.total.Shards = len(r.held)
	return p.total, errors.Join(p.errs...)
}

// pass is what one Poll gathers: its stats, its errors, and the shards whose renewal has
// already reported one (one error per shard and pass is enough).
type pass struct {
	r       *Relay
	total   Stats
	errs    []error
	renewed map[int]bool
}

// lost gives shard s up when err says its lease is gone (fenced off by a newer relay, or run
// out), counting and logging why, and reports whether it did.
func (p *pass) lost(ctx context.Context, s int, err error) bool {
	if !errors.Is(err, ErrFenced) && !errors.Is(err, lwt.ErrLeaseLost) {
		return false
	}
	p.total.Fenced++
	why := "fenced off by a newer relay"
	if errors.Is(err, lwt.ErrLeaseLost) || errors.Is(err, errLeaseRanOut) {
		p.total.LeasesLost++
		why = "lease lost"
	}
	p.r.cfg.logger.WarnContext(ctx, "outbox relay: shard lost: "+why, "relay", p.r.cfg.name, "shard", s,
		"fence", p.r.held[s].claim.Fence, "error", err)
	delete(p.r.held, s)
	return true
}

// renewDue renews every held lease that is due (see Poll).
func (p *pass) renewDue(ctx context.Context) {
	for s, sh := range p.r.held {
		if err := p.r.renewIfDue(ctx, sh); err != nil && !p.lost(ctx, s, err) && !p.renewed[s] {
			p.renewed[s] = true
			p.errs = append(p.errs, fmt.Errorf("outbox: shard %d: renew: %w", s, err))
		}
	}
}

// claimFree claims the shards no relay holds, up to WithMaxShards held, renewing the held
// leases after each claim.
func (p *pass) claimFree(ctx context.Context) {
	r := p.r
	for s := 0; s < r.cfg.shards && len(r.held) < r.cfg.maxShards; s++ {
		if r.held[s] != nil {
			continue
		}
		sh, err := r.acquire(ctx, s)
		p.renewDue(ctx)
		if err != nil {
			p.errs = append(p.errs, err)
			continue
		}
		if sh != nil {
			r.held[s] = sh
			if sh.gap != nil {
				p.errs = append(p.errs, sh.gap)
			}
		}
	}
}

// workHeld works every held shard, in the order of their numbers (workAll).
func (p *pass) workHeld(ctx context.Context) {
	ids := make([]int, 0, len(p.r.held))
	for s := range p.r.held {
		ids = append(ids, s)
	}
	sort.Ints(ids)
	for _, w := range p.r.workAll(ctx, ids) {
		p.total.add(w.st)
		if p.lost(ctx, w.shard, w.err) && w.renew {
			continue // a lease that ran out while the shard waited: given up quietly, as in Poll
		}
		if w.err != nil {
			p.errs = append(p.errs, fmt.Errorf("outbox: shard %d: %w", w.shard, w.err))
		}
	}
}

// passable checks, before a pass reads or claims anything, what the pass's reads rest on: the
// relay's clock, since a bucket closed by a time not known well enough could be one a stager
// still writes to (its reading goes to total.Clock), and the layout, since a relay of another
// shard count, bucket width or horizon would read where no stager writes.
func (r *Relay) passable(ctx context.Context, total *Stats) error {
	clk, err := r.cfg.checkClock(ctx)
	total.Clock = clk
	if err != nil {
		return err
	}
	return r.layout.ensure(ctx, r.session, &r.cfg, true, false)
}

// shardWorkers is how many held shards a pass works at once. A shard's work is a few round
// trips in a row (its arrivals, its records, the publisher, its marks): worked one after the
// other, sixteen shards made a pass last seconds at a few hundred orders a second on a loaded
// two-core machine, and the relay trailed the stagers by as much; its marks are one Paxos
// round per shard and bucket worked, however many shards run at once.
const shardWorkers = 8

// worked is what one shard's work in a pass returned.
type worked struct {
	shard int
	st    Stats
	err   error
	renew bool // err is the renewal's of a shard that waited for a worker: it was not worked
}

// workAll works the held shards ids, shardWorkers at a time, and returns each one's stats and
// error in the order of ids. The shards no worker holds at the moment (waiting for one, or
// done) have their leases renewed when due by whichever worker takes the next shard: a pass
// over many shards can be longer than a lease. A waiting shard whose renewal failed is not
// worked; a done one's failure is left to the next pass, which renews it first. Only the
// pass's goroutine changes r.held, once workAll returned.
func (r *Relay) workAll(ctx context.Context, ids []int) []worked {
	out := make([]worked, len(ids))
	for i, s := range ids {
		out[i].shard = s
	}
	var mu sync.Mutex
	working := make([]bool, len(ids))
	next := 0
	// idle renews, when due, the leases of the shards no worker holds; mu is held. A waiting
	// shard whose renewal failed is not worked; a done one's failure is the next pass's.
	idle := func() {
		for j := range ids {
			if working[j] || out[j].renew {
				continue // a worker's, or its lease already failed to renew
			}
			if err := r.renewIfDue(ctx, r.held[ids[j]]); err != nil && j >= next {
				out[j].err, out[j].renew = fmt.Errorf("renew: %w", err), true
			}
		}
	}
	r.renewIdle = func() {
		mu.Lock()
		defer mu.Unlock()
		idle()
	}
	defer func() { r.renewIdle = nil }()
	take := func(done int) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if done >= 0 {
			working[done] = false
		}
		for next < len(ids) {
			i := next
			next++
			working[i] = true
			idle()
			if out[i].err == nil {
				return i, true
			}
			working[i] = false
		}
		return 0, false
	}
	var wg sync.WaitGroup
	for range min(shardWorkers, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ok := take(-1); ok; i, ok = take(i) {
				out[i].st, out[i].err = r.work(ctx, r.held[ids[i]])
			}
		}()
	}
	wg.Wait()
	return out
}

// Release gives up every held shard (RELEASED, so the next relay claims it without waiting
// for the lease).
func (r *Relay) Release(ctx context.Context) {
	if argcheck.Call(ErrInvalidOption, "Relay", r == nil, ctx) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, sh := range r.held {
		_ = r.leases.Release(ctx, sh.claim, []byte("relay stopped"))
		delete(r.held, s)
	}
}

// Held returns the shards this relay holds and the fence of each.
func (r *Relay) Held() map[int]int64 {
	if r == nil {
		return map[int]int64{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]int64{}
	for s, sh := range r.held {
		out[s] = sh.claim.Fence
	}
	return out
}

// withoutStop returns a pass's error without the parts that stop, the error of the ended
// context of the pass (nil while it runs), caused: the shards that failed for another reason
// are still reported.
func withoutStop(err, stop error) error {
	if err == nil || stop == nil {
		return err
	}
	parts := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		parts = joined.Unwrap()
	}
	var kept []error
	for _, e := range parts {
		if !errors.Is(e, stop) {
			kept = append(kept, e)
		}
	}
	return errors.Join(kept...)
}

// isNil reports whether p is nil or a typed nil (a nil PublisherFunc, a nil pointer): calling
// it would panic on the relay's first pass instead of failing NewRelay.
func isNil(p Publisher) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
