package lwt

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// BatchStore runs the record state machine of Store on a BatchTable, many records of one
// partition at a time: BeginBatch claims them with one conditional batch, FinishBatch ends
// them with another, RenewBatch renews their leases. Cassandra applies a conditional batch on
// one partition in one Paxos round, so a batch of n records costs one LWT, not n.
//
// A batch applies whole or not at all. When one record blocks it (a duplicate, a live claim),
// the rejection returns the current rows; BeginBatch settles each record from them, exactly as
// Begin settles one, and sends the rest again. Every claim is fenced like a single one (owner
// and fence), and an unknown outcome is settled by a serial read of the batch's rows
// (ResolveBatch).
//
// Leases are judged by Cassandra's clock: a claim writes, in the same batch, a lease_owner cell
// whose TTL is the lease (rounded up to whole seconds, Cassandra's TTL resolution), and renewals
// rewrite it. A STARTED record is taken over only by a statement conditioned on that cell being
// gone (IF ... lease_owner = null), so no worker's clock decides when a lease has passed. The
// store's clock (WithClock) still computes the TTLs from the records' expiry.
//
// A BatchStore is safe for concurrent use and starts no goroutines.
type BatchStore struct {
	base     *Store // the session, the options, the clock and the counters
	keyCol   string // the clustering column's name, as rows returned by the node name it
	nParts   int
	stmt     batchStatements
	leaseTTL int
}

// NewBatchStore returns a store over table. It takes the options of NewStore (WithCache
// excepted, which it ignores); the lease may not exceed the retention.
func NewBatchStore(session *gocql.Session, table BatchTable, opts ...Option) (*BatchStore, error) {
	if session == nil {
		return nil, fmt.Errorf("%w: nil session", ErrInvalidArgument)
	}
	stmt, err := table.validate()
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &BatchStore{
		base: &Store{session: session, cfg: cfg}, keyCol: table.KeyColumn, nParts: len(table.PartitionColumns),
		stmt: stmt, leaseTTL: leaseSeconds(cfg.lease),
	}, nil
}

// Stats returns a snapshot of the store's counters; zero for a nil *BatchStore.
func (s *BatchStore) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return s.base.Stats()
}

// BatchItem is one record for BeginBatch to claim: its key within the partition and the
// fingerprint of the request it stands for (nil when requests are not compared).
type BatchItem struct {
	Key         string
	Fingerprint []byte
}

// Begun is what BeginBatch did with one item; exactly one field is set, as Begin returns
// exactly one of its results: a Claim (run the operation, then end the claim with
// FinishBatch), a final Record (COMPLETED or FAILED: replay it), or Err (ErrKeyReuse,
// *InProgressError).
type Begun struct {
	Claim  *Claim
	Record *Record
	Err    error
}

// slot is one item's state while BeginBatch works on it.
type slot struct {
	item      BatchItem
	known     bool    // cur and leaseLive reflect the table
	cur       *Record // nil: no live record
	leaseLive bool
	plan      *Claim // the claim sent in the current round
	out       *Begun
}

// maxClaimRounds bounds BeginBatch's rounds: each one settles every record it learnt about, so
// only records changed by other workers between two rounds are left for the next.
const maxClaimRounds = 8

// BeginBatch claims items, records of one partition (partition binds one value to each of the
// table's PartitionColumns), and returns what it did with each, in order. It sends the
// claimable items as one conditional batch; a rejected batch returns the rows that blocked it,
// each item is settled from its row (replay, key reuse, in progress, take over, or insert)
// and the remaining claims are sent again. Items still contended after maxClaimRounds rounds
// get ErrInProgress.
//
// The error is for the whole call: ErrInvalidKey, ErrInvalidArgument (no items, more than
// MaxBatchRows, a key twice), ctx.Err(), a driver error from a batch that certainly did not
// apply, or an *cas.OutcomeUnknownError (the batch's claims, if it applied, hold their records
// until their leases pass).
func (s *BatchStore) BeginBatch(ctx context.Context, partition Key, items []BatchItem) ([]Begun, error) {
	if err := s.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := s.validate(partition, items); err != nil {
		return nil, err
	}
	slots := make([]*slot, len(items))
	for i, it := range items {
		if it.Fingerprint == nil {
			it.Fingerprint = []byte{} // an empty blob, not a null cell (a tombstone)
		}
		slots[i] = &slot{item: it}
	}
	for range maxClaimRounds {
		done, err := s.claimRound(ctx, partition, slots)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	out := make([]Begun, len(slots))
	for i, sl := range slots {
		if sl.out == nil {
			s.base.record(Observation{Kind: ObservedConflict, Key: s.key(partition, sl.item.Key)})
			sl.out = &Begun{Err: ErrInProgress}
		}
		out[i] = *sl.out
	}
	return out, nil
}

// claimRound sends one batch of the claims of slots that are claimable now and reports whether
// the claiming is done: the batch applied, or no slot is left to claim. A rejected batch leaves
// each of its slots holding the record that blocked it, for the next round's plan.
func (s *BatchStore) claimRound(ctx context.Context, partition Key, slots []*slot) (done bool, err error) {
	planned, b, err := s.plan(partition, slots)
	if err != nil || len(planned) == 0 {
		return true, err
	}
	applied, rows, err := cas.ResolveBatch(ctx, cas.BatchConditional{
		Op: "claim", Session: s.base.session, Batch: b, Read: s.readQuery(partition, planned),
		Applied:  func(rows []cas.Row) bool { return showsAll(s.byKey(rows), planned, StatusStarted) },
		Patience: s.base.claimPatience(), Observe: s.base.observeCAS(partition),
	}, s.base.cfg.commit, s.base.cfg.serial)
	if err != nil {
		return false, err
	}
	if applied {
		for _, sl := range planned {
			sl.out = &Begun{Claim: sl.plan}
			s.base.record(Observation{Kind: ObservedClaim, Key: sl.plan.Key})
			if sl.plan.TakenOver {
				s.base.record(Observation{Kind: ObservedTakeover, Key: sl.plan.Key})
			}
		}
		return true, nil
	}
	if !fullRows(rows) {
		// A batch of updates alone returns only its conditions' columns: read the records.
		if rows, err = s.read(ctx, partition, planned); err != nil {
			return false, err
		}
	}
	found := s.byKey(rows)
	for _, sl := range planned {
		sl.known, sl.cur, sl.leaseLive = true, nil, false
		if row, ok := found[sl.item.Key]; ok {
			sl.cur = recordFromRow(row)
			sl.leaseLive = sl.cur.LeaseOwner != gocql.UUID{} // no legacy rows: the lease cell alone
		}
	}
	return false, nil
}

// plan settles every undecided slot whose record is known and adds a claim of each claimable
// one to a new batch, under a new owner id.
func (s *BatchStore) plan(partition Key, slots []*slot) ([]*slot, *gocql.Batch, error) {
	owner, err := gocql.RandomUUID()
	if err != nil {
		return nil, nil, err
	}
	now := s.base.now()
	b := s.base.session.NewBatch(gocql.UnloggedBatch)
	var planned []*slot
	for _, sl := range slots {
		if sl.out != nil {
			continue
		}
		key := s.key(partition, sl.item.Key)
		d := decideInsert
		if sl.known {
			d = decide(sl.cur, sl.item.Fingerprint, sl.leaseLive)
		}
		switch d {
		case decideReplay:
			s.base.record(Observation{Kind: ObservedReplay, Key: key})
			sl.out = &Begun{Record: sl.cur}
			continue
		case decideKeyReuse:
			s.base.record(Observation{Kind: ObservedKeyReuse, Key: key})
			sl.out = &Begun{Err: ErrKeyReuse}
			continue
		case decideInProgress:
			s.base.record(Observation{Kind: ObservedConflict, Key: key})
			// The node keeps the lease's end in the cell's TTL, which a CAS result does not carry:
			// a full lease from now bounds it.
			sl.out = &Begun{Err: &InProgressError{LeaseUntil: now.Add(s.base.cfg.lease), Attempts: sl.cur.Attempts}}
			continue
		}
		c := &Claim{Key: key, Owner: owner, Fence: 1, Attempts: 1, LeaseUntil: now.Add(s.base.cfg.lease), ExpiresAt: now.Add(s.base.cfg.retention)}
		ttl := ttlSeconds(c.ExpiresAt, now)
		if d == decideInsert {
			b.Query(s.stmt.insert, append(append([]any{}, key...), sl.item.Fingerprint, owner, c.Fence, c.Attempts, now, now, c.ExpiresAt, ttl)...)
		} else {
			prev := sl.cur
			c.Fence, c.Attempts, c.TakenOver, c.Previous = prev.Fence+1, prev.Attempts+1, prev.Status == StatusStarted, prev
			created := prev.CreatedAt
			if created.IsZero() {
				created = now
			}
			stmt := s.stmt.reclaim
			if c.TakenOver {
				stmt = s.stmt.takeover
			}
			args := append([]any{ttl, sl.item.Fingerprint, owner, c.Fence, c.Attempts, created, now, c.ExpiresAt}, key...)
			b.Query(stmt, append(args, prev.Owner, prev.Fence)...)
		}
		b.Query(s.stmt.lease, append([]any{min(s.leaseTTL, ttl), owner}, key...)...)
		sl.plan = c
		planned = append(planned, sl)
	}
	return planned, b, nil
}

// validate checks a partition and the items of one batch.
func (s *BatchStore) validate(partition Key, items []BatchItem) error {
	cols := make([]string, s.nParts)
	for i := range cols {
		cols[i] = fmt.Sprintf("partition column %d", i+1)
	}
	if err := validateKey(cols, partition, s.base.cfg.maxKey); err != nil {
		return err
	}
	return validateItems(s.keyCol, items, s.base.cfg.maxKey)
}

// key is the full key of a record: the partition's values and the record's key.
func (s *BatchStore) key(partition Key, k string) Key {
	return append(append(make(Key, 0, len(partition)+1), partition...), k)
}

// readQuery selects the records of slots, for ResolveBatch to read after an unknown outcome.
func (s *BatchStore) readQuery(partition Key, slots []*slot) *gocql.Query {
	keys := make([]string, len(slots))
	for i, sl := range slots {
		keys[i] = sl.item.Key
	}
	return s.readKeys(partition, keys)
}

func (s *BatchStore) readKeys(partition Key, keys []string) *gocql.Query {
	return s.base.session.Query(s.stmt.read, append(append([]any{}, partition...), keys)...)
}

// read reads the records of slots at the serial consistency.
func (s *BatchStore) read(ctx context.Context, partition Key, slots []*slot) ([]cas.Row, error) {
	start := time.Now()
	rows, err := cas.ReadSerialAll(ctx, s.readQuery(partition, slots), s.base.cfg.serial)
	s.base.record(Observation{Kind: ObservedLWT, Key: partition, Op: "read", Applied: len(rows) > 0, Latency: time.Since(start), Err: err})
	return rows, err
}

// byKey indexes rows by the record key they hold.
func (s *BatchStore) byKey(rows []cas.Row) map[string]cas.Row {
	m := make(map[string]cas.Row, len(rows))
	for _, r := range rows {
		if k, ok := r[s.keyCol].(string); ok {
			m[k] = r
		}
	}
	return m
}

// showsAll reports whether every planned claim's record shows it in status to: the batch that
// carried them applied (a batch applies whole, and the owner id is new to it).
func showsAll(found map[string]cas.Row, planned []*slot, to Status) bool {
	for _, sl := range planned {
		row, ok := found[sl.item.Key]
		if !ok || !holds(sl.plan, to)(row, true) {
			return false
		}
	}
	return len(planned) > 0
}

// fullRows reports whether rows carry whole records, as a rejected batch does when one of its
// statements is an INSERT ... IF NOT EXISTS; otherwise they carry the conditions' columns.
func fullRows(rows []cas.Row) bool {
	for _, r := range rows {
		if _, ok := r["fingerprint"]; !ok {
			return false
		}
	}
	return true
}

// checkCall refuses a call on a nil *BatchStore or with a nil context (ErrInvalidArgument).
func (s *BatchStore) checkCall(ctx context.Context) error {
	return argcheck.Call(ErrInvalidArgument, "*lwt.BatchStore", s == nil, ctx)
}
