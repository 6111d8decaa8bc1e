package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Intent states once settled.
const (
	StatePublished = "PUBLISHED"
	StateDropped   = "DROPPED"
)

// intent is one row of outbox_intents.
type intent struct {
	bucket    int64
	shard     int
	namespace string
	key       string
	record    string // the record's table when not the outbox's records table (a guard's)
	fence     int64
	owner     gocql.UUID
	stagedAt  time.Time
	state     string
}

// decision is what an intent's record says.
type decision int

const (
	wait    decision = iota // the run is still in flight (STARTED by the intent's claim)
	publish                 // committed: COMPLETED by the intent's claim
	drop                    // released, failed, fenced off by another claim, or expired
)

// settled is an intent with its record's verdict and, when committed, its messages.
type settled struct {
	in   intent
	dec  decision
	msgs []Message
	err  error
}

// settleWorkers bounds the reads (of records, or of bucket partitions) a relay has in flight.
const settleWorkers = 8

// bucket works one bucket partition of sh, read as rd: it settles the pending intents, publishes the
// committed ones in staging order, and marks them. It returns how many intents stay pending.
func (r *Relay) bucket(ctx context.Context, sh *shard, b int64, rd bucketRead) (Stats, int, error) {
	st := Stats{Buckets: 1}
	rows, relayFence, err := rd.rows, rd.fence, rd.err
	if err != nil || len(rows) == 0 {
		return st, len(rows), err
	}
	if relayFence != sh.claim.Fence {
		if err := r.raise(ctx, sh, b, relayFence); err != nil {
			return st, len(rows), err
		}
	}
	verdicts := r.settleAll(ctx, rows)
	var marks []settled
	var msgs []Message
	waiting := 0
	for _, v := range verdicts {
		switch {
		case v.err != nil:
			err = errors.Join(err, v.err)
			waiting++
		case v.dec == wait:
			waiting++
		case v.dec == publish:
			msgs = append(msgs, v.msgs...)
			marks = append(marks, v)
		default:
			marks = append(marks, v)
		}
	}
	st.Waiting = waiting
	if len(msgs) > 0 {
		// The lease must still be ours by our own clock: past it, a successor may be publishing.
		if rerr := r.renewIfDue(ctx, sh); rerr != nil {
			return st, len(rows), errors.Join(err, rerr)
		}
		for i := 0; i < len(msgs); i += r.cfg.publishBatch {
			if perr := r.pub.Publish(ctx, msgs[i:min(i+r.cfg.publishBatch, len(msgs))]); perr != nil {
				return st, len(rows), errors.Join(err, fmt.Errorf("outbox: publish: %w", perr))
			}
		}
		st.Published = len(msgs)
	}
	n, merr := r.mark(ctx, sh, b, marks)
	st.Settled = n
	for _, m := range marks[:n] {
		if m.dec == drop {
			st.Dropped++
		}
	}
	return st, len(rows) - n, errors.Join(err, merr)
}

// readBucket reads the pending intents of one partition, in staging order, and its relay fence.
func (r judge) readBucket(ctx context.Context, b int64, s int) ([]intent, int64, error) {
	iter := r.session.Query(r.bucket, b, s).WithContext(ctx).Consistency(r.cfg.consistency).PageSize(1000).Iter()
	var out []intent
	var fence int64
	var in intent
	var rf *int64
	var state, rec *string
	for iter.Scan(&in.namespace, &in.key, &in.fence, &in.owner, &in.stagedAt, &state, &rf, &rec) {
		if rf != nil {
			fence = *rf
		}
		in.record = ""
		if rec != nil {
			in.record = *rec
		}
		if in.namespace == "" || (state != nil && *state != "") {
			continue // the static row alone, or settled
		}
		in.bucket, in.shard = b, s
		out = append(out, in)
	}
	if err := iter.Close(); err != nil {
		return nil, 0, fmt.Errorf("outbox: read bucket %d shard %d: %w", b, s, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].stagedAt.Before(out[j].stagedAt) })
	return out, fence, nil
}

// raise sets the partition's relay fence to the shard claim's, so a relay with an older fence
// finds its marks rejected. A higher fence there means a newer relay holds the shard.
func (r *Relay) raise(ctx context.Context, sh *shard, b int64, cur int64) error {
	if cur > sh.claim.Fence {
		return ErrFenced
	}
	stmt, args := r.st.raise, []any{r.cfg.intentTTL(), sh.claim.Fence, b, sh.id, sh.claim.Fence}
	if cur == 0 {
		stmt, args = r.st.raiseNull, args[:4]
	}
	applied, row, err := cas.UpdateIf(ctx, r.session.Query(stmt, args...).Consistency(r.cfg.consistency), r.cfg.serial)
	if err != nil {
		return fmt.Errorf("outbox: raise relay fence: %w", err)
	}
	if !applied {
		return fmt.Errorf("%w: relay fence of bucket %d is %v", ErrFenced, b, row["relay_fence"]) // raised meanwhile
	}
	return nil
}

// judge settles intents by their records; the relay and the operator's listing share it.
type judge struct {
	session *gocql.Session
	cfg     config
	read    string // an operation's record: its status, owner, fence and outbox cell (recordQuery)
	bucket  string // the intents of one partition, and its relay fence
}

func newJudge(session *gocql.Session, cfg config) judge {
	return judge{session: session, cfg: cfg,
		read:   "SELECT status, owner, fence, " + ColumnName + " FROM " + cfg.q.records + " WHERE namespace = ? AND key = ?",
		bucket: "SELECT namespace, key, fence, owner, staged_at, state, relay_fence, record FROM " + cfg.q.intents + " WHERE bucket = ? AND shard = ?",
	}
}

// settleAll reads the records of rows, a few at a time, and returns their verdicts in order.
func (r judge) settleAll(ctx context.Context, rows []intent) []settled {
	out := make([]settled, len(rows))
	inParallel(len(rows), func(i int) { out[i] = r.settle(ctx, rows[i]) })
	return out
}

// inParallel calls fn(0) to fn(n-1), settleWorkers at a time, and returns when all returned.
func inParallel(n int, fn func(i int)) {
	sem := make(chan struct{}, settleWorkers)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// settle decides an intent by its record. A QUORUM read that shows the intent's claim
// COMPLETED is final (a completed record never changes); anything else is read again at serial,
// which completes a completion in flight, before a verdict.
func (r judge) settle(ctx context.Context, in intent) settled {
	q, err := r.recordQuery(in)
	if err != nil {
		return settled{in: in, err: err}
	}
	row, found, err := r.readRecord(ctx, q, false)
	if err == nil && found && r.verdict(in, row) == publish {
		return r.committed(in, row)
	}
	q, _ = r.recordQuery(in) // a fresh query: the first one's consistency is set
	row, found, err = r.readRecord(ctx, q, true)
	if err != nil {
		return settled{in: in, err: err}
	}
	if !found {
		return settled{in: in, dec: drop}
	}
	if v := r.verdict(in, row); v != publish {
		return settled{in: in, dec: v}
	}
	return r.committed(in, row)
}

func (r judge) readRecord(ctx context.Context, q *gocql.Query, serial bool) (cas.Row, bool, error) {
	if serial {
		return cas.ReadSerial(ctx, q, r.cfg.serial)
	}
	m := map[string]any{}
	err := q.WithContext(ctx).Consistency(r.cfg.consistency).MapScan(m)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, false, nil
	}
	return cas.Row(m), err == nil, err
}

func (r judge) verdict(in intent, row cas.Row) decision {
	owner, _ := row["owner"].(gocql.UUID)
	fence, _ := row["fence"].(int64)
	status, _ := row["status"].(string)
	if owner != in.owner || fence != in.fence {
		return drop // another claim took the key: the intent's run can no longer commit
	}
	switch lwt.Status(status) {
	case lwt.StatusCompleted:
		return publish
	case lwt.StatusStarted:
		return wait
	}
	return drop
}

func (r judge) committed(in intent, row cas.Row) settled {
	b, _ := row[ColumnName].([]byte)
	if len(b) == 0 {
		return settled{in: in, dec: drop} // committed without events (a Stage that staged none)
	}
	c, err := decodeCell(b)
	if err != nil {
		return settled{in: in, err: fmt.Errorf("outbox: %s/%s: %w", in.namespace, in.key, err)}
	}
	return settled{in: in, dec: publish, msgs: c.messages(in.namespace, in.key, in.fence)}
}

// mark records the verdicts in conditional batches fenced on the partition's relay fence, and
// returns how many were marked (a prefix of marks).
func (r *Relay) mark(ctx context.Context, sh *shard, b int64, marks []settled) (int, error) {
	done := 0
	for i := 0; i < len(marks); i += lwt.MaxBatchRows {
		batch := r.session.NewBatch(gocql.UnloggedBatch)
		batch.Cons = r.cfg.consistency
		now := r.cfg.now()
		for _, m := range marks[i:min(i+lwt.MaxBatchRows, len(marks))] {
			state := StatePublished
			if m.dec == drop {
				state = StateDropped
			}
			batch.Query(r.st.mark, r.cfg.intentTTL(), state, now, b, sh.id, m.in.namespace, m.in.key, m.in.fence, sh.claim.Fence)
		}
		applied, rows, err := cas.ExecBatch(ctx, r.session, batch, r.cfg.serial)
		if err != nil {
			return done, fmt.Errorf("outbox: mark: %w", err)
		}
		if !applied {
			return done, fmt.Errorf("%w: marks of bucket %d rejected: %v", ErrFenced, b, rows)
		}
		done += batch.Size()
	}
	return done, nil
}
