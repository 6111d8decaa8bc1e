package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/schema"
)

// ownerStatements are the conditional writes of the scope_owners table (see Own).
type ownerStatements struct {
	insert, raise, refresh, takeover, acquire, reacquire, renew, release, read, list, forget string
}

func buildOwnerStatements(keyspace, name string) (ownerStatements, error) {
	t, err := schema.QualifiedName(keyspace, name)
	if err != nil {
		return ownerStatements{}, fmt.Errorf("%w: owners table: %w", ErrInvalidOption, err)
	}
	where := " WHERE record_table = ? AND scope = ?"
	return ownerStatements{
		insert:  "INSERT INTO " + t + " (record_table, scope, epoch, holder) VALUES (?, ?, ?, ?) IF NOT EXISTS",
		raise:   "UPDATE " + t + " SET epoch = ?, holder = ?" + where + " IF epoch < ?",
		refresh: "UPDATE " + t + " SET holder = ?" + where + " IF epoch = ? AND holder = ?",
		// A new holder at the row's epoch takes it only once the lease cell is gone by the
		// server's clock, and sets its own lease cell in the same round: of holders racing at
		// one epoch exactly one applies, and a live holder (whose renewals keep the cell) is
		// never taken from.
		takeover: "BEGIN BATCH UPDATE " + t + " USING TTL ? SET lease_holder = ?" + where + " IF epoch = ? AND lease_holder = null; " +
			"UPDATE " + t + " SET epoch = ?, holder = ?" + where + "; APPLY BATCH",
		acquire:   "UPDATE " + t + " USING TTL ? SET lease_holder = ?" + where + " IF epoch = ? AND holder = ? AND lease_holder = null",
		reacquire: "UPDATE " + t + " USING TTL ? SET lease_holder = ?" + where + " IF epoch = ? AND holder = ? AND lease_holder = ?",
		// The renewal rewrites the epoch and holder too, so they keep the table's TTL from the
		// last renewal on: a scope owned for longer than that TTL is not forgotten.
		renew: "BEGIN BATCH UPDATE " + t + " USING TTL ? SET lease_holder = ?" + where + " IF epoch = ? AND holder = ?; " +
			"UPDATE " + t + " SET epoch = ?, holder = ?" + where + "; APPLY BATCH",
		release: "DELETE lease_holder FROM " + t + where + " IF lease_holder = ?",
		read:    "SELECT epoch, holder, lease_holder FROM " + t + where,
		// The operator's: every row (one per scope) and the deletion of one nobody holds.
		list:   "SELECT record_table, scope, epoch, holder, lease_holder, WRITETIME(holder) AS renewed FROM " + t,
		forget: "DELETE FROM " + t + where + " IF lease_holder = null",
	}, nil
}

// lease is an owner's hold on its scope in scope_owners: while the monotonic clock is before
// deadline, the server's lease cell is provably still this owner's, so the fast path may admit.
type lease struct {
	scope    []byte // the scope's encoding, the row's key
	key      Key    // the scope, for observations
	epoch    int64
	deadline atomic.Int64 // nanoseconds of the store's monotonic clock; 0: none
	// writes are the fast-path records between their ownership check and their write's end;
	// Disown waits for them before it releases the lease.
	writes sync.WaitGroup
	stop   func()
}

// mono is the store's monotonic clock: the time since the store was made, immune to changes of
// the wall clock.
func (s *Store) mono() int64 { return int64(time.Since(s.born)) }

// live reports whether the lease's deadline has not passed.
func (s *Store) live(l *lease) bool {
	d := l.deadline.Load()
	return d != 0 && s.mono() < d
}

// ownerSerial is the Paxos consistency of every statement on scope_owners, whatever the store's
// WithSerialConsistency: ownership decided per datacentre (LOCAL_SERIAL) would let one owner in
// each take a scope.
const ownerSerial = gocql.Serial

// take records on the server that this store owns scope at epoch: a conditional insert of the
// row, else a conditional raise of its epoch, else (the same epoch) a refresh if this store took
// it before, or a take-over once the previous holder's lease cell has expired. A greater epoch
// gives ErrSuperseded while its holder's lease is live and ErrEpochRegressed once it is not.
func (s *Store) take(ctx context.Context, l *lease) error {
	rt := s.ownerTable()
	applied, _, err := cas.Exec(ctx, s.session.Query(s.own.insert, rt, l.scope, l.epoch, s.holder), ownerSerial)
	if err != nil || applied {
		return s.ownerErr(err)
	}
	applied, row, err := cas.Exec(ctx, s.session.Query(s.own.raise, l.epoch, s.holder, rt, l.scope, l.epoch), ownerSerial)
	if err != nil || applied {
		return s.ownerErr(err)
	}
	if e, _ := row["epoch"].(int64); e == l.epoch {
		return s.takeSame(ctx, l)
	}
	return s.refuse(ctx, l)
}

// takeSame takes the scope at the epoch the row holds already: a refresh when this store is its
// holder, else a take-over, tried until the other holder's lease cell is gone. A holder that
// died (a restarted static group member's previous process) leaves its cell to expire within a
// lease of its last renewal; a live one renews it, so after a lease and the TTL's second of
// rounding, the scope is refused (ErrSuperseded): two live holders never share an epoch.
func (s *Store) takeSame(ctx context.Context, l *lease) error {
	rt, ttl := s.ownerTable(), int(s.cfg.ownerLease/time.Second)
	applied, _, err := cas.Exec(ctx, s.session.Query(s.own.refresh, s.holder, rt, l.scope, l.epoch, s.holder), ownerSerial)
	if err != nil || applied {
		return s.ownerErr(err)
	}
	giveUp := s.mono() + int64(s.cfg.ownerLease+time.Second+s.retryEvery())
	for {
		applied, row, err := cas.Exec(ctx, s.session.Query(s.own.takeover, ttl, s.holder, rt, l.scope, l.epoch,
			l.epoch, s.holder, rt, l.scope), ownerSerial)
		switch {
		case err != nil && !cas.IsOutcomeUnknown(err):
			return s.ownerErr(err)
		case applied:
			return nil
		case err == nil && row["epoch"] != l.epoch:
			return fmt.Errorf("%w: the server holds epoch %v", ErrSuperseded, row["epoch"])
		case err == nil && row["lease_holder"] == s.holder:
			return nil // an earlier try whose outcome was unknown applied: acquire reacquires it
		case s.mono() > giveUp:
			return fmt.Errorf("%w: epoch %d is held by another live holder (%v)", ErrSuperseded, l.epoch, row["lease_holder"])
		}
		// Another holder's lease is live, or the outcome is unknown: the next try settles it.
		if err := loop.Sleep(ctx, s.retryEvery()); err != nil {
			return err
		}
	}
}

// refuse is the error of an epoch below the row's: ErrSuperseded while another holder's lease is
// live (this process is a zombie of an older assignment), ErrEpochRegressed once none is (the
// epochs went back: nothing at the row's epoch holds the scope, so nothing ever will again).
func (s *Store) refuse(ctx context.Context, l *lease) error {
	row, found, err := cas.ReadSerial(ctx, s.session.Query(s.own.read, s.ownerTable(), l.scope), ownerSerial)
	if err != nil {
		return s.ownerErr(err)
	}
	if !found {
		// Forgotten meanwhile (cassdedup owners forget): Own again takes it.
		return fmt.Errorf("%w: the scope's row was deleted while being taken", ErrSuperseded)
	}
	if lh, _ := row["lease_holder"].(gocql.UUID); lh != (gocql.UUID{}) {
		return fmt.Errorf("%w: the server holds epoch %v", ErrSuperseded, row["epoch"])
	}
	s.stats.epochRegressed.Add(1)
	s.record(Observation{Kind: ObservedEpochRegressed, Key: l.key, Err: ErrEpochRegressed})
	return fmt.Errorf("%w: the server holds epoch %v and no live lease", ErrEpochRegressed, row["epoch"])
}

// retryEvery is how often Own asks again for a lease cell another holder has.
func (s *Store) retryEvery() time.Duration { return min(s.cfg.ownerLease/10, 500*time.Millisecond) }

// ownerErr marks an error of a statement on scope_owners that SERIAL could not reach (a quorum
// of the replicas of every datacentre was not available) with ErrSerialUnavailable.
func (s *Store) ownerErr(err error) error {
	var un *gocql.RequestErrUnavailable
	if errors.As(err, &un) {
		return fmt.Errorf("%w: %w", ErrSerialUnavailable, err)
	}
	return err
}

// acquire waits until the previous owner's lease cell is gone by the server's clock and sets
// this owner's, then arms the local deadline. The previous owner stopped admitting a margin
// before its cell expired, so from here no fast path of it can write anything new.
func (s *Store) acquire(ctx context.Context, l *lease) error {
	rt, ttl := s.ownerTable(), int(s.cfg.ownerLease/time.Second)
	for {
		sent := s.mono()
		applied, row, err := cas.Exec(ctx, s.session.Query(s.own.acquire, ttl, s.holder, rt, l.scope, l.epoch, s.holder), ownerSerial)
		if err == nil && !applied && row["lease_holder"] == s.holder {
			// This store's own earlier lease (an earlier epoch it owned): its fast paths are
			// fenced here already (their owner is no longer registered).
			applied, row, err = cas.Exec(ctx, s.session.Query(s.own.reacquire, ttl, s.holder, rt, l.scope, l.epoch, s.holder, s.holder), ownerSerial)
		}
		switch {
		case err != nil && !cas.IsOutcomeUnknown(err):
			return s.ownerErr(err)
		case applied:
			l.deadline.Store(sent + int64(s.cfg.ownerLease-s.cfg.ownerMargin))
			return nil
		case err == nil && (row["epoch"] != l.epoch || row["holder"] != s.holder):
			return fmt.Errorf("%w: the server holds epoch %v", ErrSuperseded, row["epoch"])
		}
		// Another holder's lease is live (or the outcome is unknown: the next try settles it).
		if err := loop.Sleep(ctx, s.retryEvery()); err != nil {
			return err
		}
	}
}

// renewEvery starts the goroutine that renews l every third of the lease. A renewal that applies
// moves the deadline on; one that does not (the scope was taken at a newer epoch) ends the fast
// path at once, which superseded calls; an error leaves the deadline to pass.
func (s *Store) renewEvery(l *lease, superseded func()) func() {
	rt, ttl := s.ownerTable(), int(s.cfg.ownerLease/time.Second)
	return loop.Every(s.cfg.ownerLease/3, func() bool {
		if s.session.Closed() {
			l.deadline.Store(0) // nothing can renew it any more: the fast path stops
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ownerLease/3)
		defer cancel()
		sent := s.mono()
		applied, _, err := cas.Exec(ctx, s.session.Query(s.own.renew, ttl, s.holder, rt, l.scope, l.epoch, s.holder,
			l.epoch, s.holder, rt, l.scope), ownerSerial)
		switch {
		case err != nil:
			return true
		case applied:
			l.deadline.Store(sent + int64(s.cfg.ownerLease-s.cfg.ownerMargin))
			return true
		}
		l.deadline.Store(0)
		s.stats.superseded.Add(1)
		s.record(Observation{Kind: ObservedSuperseded, Key: l.key, Op: "renew"})
		superseded()
		return false
	})
}

// release deletes l's lease cell if it is still this store's, once the fast-path writes that
// passed their ownership check have ended, so the next owner need not wait for its TTL.
func (s *Store) release(l *lease) {
	l.deadline.Store(0)
	l.writes.Wait()
	if l.stop != nil {
		l.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.commitTimeout)
	defer cancel()
	// A failed release leaves the cell to its TTL: the next owner waits for it.
	_, _, _ = cas.Exec(ctx, s.session.Query(s.own.release, s.ownerTable(), l.scope, s.holder), ownerSerial)
}

// ownerTable is the record table's name as scope_owners keys it.
func (s *Store) ownerTable() string { return s.table.Keyspace + "." + s.table.Name }

// newHolder is a store's identity in scope_owners.
func newHolder() gocql.UUID {
	u, err := gocql.RandomUUID()
	if err != nil {
		return gocql.TimeUUID()
	}
	return u
}

// noLease is the error of a call of a scope this store owns while its lease is not live: Own
// has not acquired it yet, or it passed its deadline unrenewed, or another process took the
// scope. Nothing runs, not even the LWT path, which could meet the other owner's fast path.
func (s *Store) noLease(key Key) error {
	s.stats.noLease.Add(1)
	s.record(Observation{Kind: ObservedNoLease, Key: key})
	return fmt.Errorf("%w: %v", ErrNoLease, key)
}

// wallDeadline is l's deadline on the wall clock, for a context: a fast-path fn's context ends
// when the lease it was admitted under can no longer be relied on.
func (s *Store) wallDeadline(l *lease) time.Time {
	return time.Now().Add(time.Duration(l.deadline.Load() - s.mono()))
}
