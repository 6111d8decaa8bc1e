package outbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/cas"
)

// Intent states once settled.
const (
	StatePublished = "PUBLISHED"
	StateDropped   = "DROPPED"
	StateParked    = "PARKED" // the events are in outbox_parked, for an operator
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
	// Since 015_outbox_durable.cql: the record's expiry, whether the run sealed its completion
	// (a copy of its events is in the row), and what a relay learnt while it could not publish.
	expiresAt   time.Time
	sealed      bool
	committed   bool
	attempts    int
	nextAttempt time.Time
	lastError   string
	// arrival: read from its arrival (outbox_arrivals), not its row. Whether the run sealed a
	// copy of its events is unknown until the bucket's sweep reads the row.
	arrival bool
	// Since 020_outbox_key_order.cql: under WithKeyOrder, the key all the run's events carry
	// ("" when they carry none, or without the option: not ordered).
	orderKey string
}

// decision is what an intent's record says.
type decision int

const (
	wait    decision = iota // the run is still in flight (STARTED by the intent's claim)
	publish                 // committed: COMPLETED by the intent's claim
	drop                    // released, failed, fenced off by another claim, or expired unsealed
	expired                 // the record expired before the intent settled: commit unknown, park the copy
)

// settled is an intent with its record's verdict and, when committed, its messages and the
// encoded cell they came from.
type settled struct {
	in   intent
	dec  decision
	msgs []Message
	cell []byte
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
	now := r.cfg.now()
	for _, in := range rows {
		st.Oldest = max(st.Oldest, now.Sub(in.stagedAt))
	}
	due, marks, err := r.sortVerdicts(sh, r.settleAll(ctx, rows), now, &st)
	if len(due) > 0 {
		// The lease must still be ours by our own clock: past it, a successor may be publishing.
		if rerr := r.renewIfDue(ctx, sh); rerr != nil {
			return st, len(rows), errors.Join(err, rerr)
		}
		pm, perr := r.publishStep(ctx, sh, b, due, &st)
		err = errors.Join(err, perr)
		marks = append(marks, pm...)
	}
	n, merr := r.mark(ctx, sh, b, marks)
	if rd.marked != nil {
		rd.marked(marks[:n])
	}
	countMarks(marks[:n], &st)
	st.Waiting = len(rows) - st.Settled // in flight, backing off, failed, held or unreadable
	return st, st.Waiting, errors.Join(err, merr, r.parkedError(marks[:n]))
}

// sortVerdicts sorts a bucket's verdicts into the intents due for publication, in staging
// order, and the marks of those that are done without one (dropped, expired, or held back
// under WithKeyOrder); the others wait (in flight, backing off) or failed to settle (err).
func (r *Relay) sortVerdicts(sh *shard, verdicts []settled, now time.Time, st *Stats) (due []settled, marks []mark, err error) {
	for _, v := range verdicts {
		if r.cfg.keyOrder {
			if held, m := r.holdBack(sh, v, now, st); held {
				if m != nil {
					marks = append(marks, *m)
				}
				continue
			}
		}
		switch {
		case v.err != nil:
			err = errors.Join(err, v.err)
		case v.dec == wait:
		case v.dec == publish && v.in.attempts > 0 && now.Before(v.in.nextAttempt):
			st.Backoff++
		case v.dec == publish:
			due = append(due, v)
		case v.dec == expired:
			marks = append(marks, mark{v: v, state: StateParked, reason: ReasonExpired})
		default:
			marks = append(marks, mark{v: v, state: StateDropped})
		}
	}
	return due, marks, err
}

// countMarks adds the marks written to st: each settles its intent, as dropped, published or
// parked (expired, or for another reason).
func countMarks(written []mark, st *Stats) {
	for _, m := range written {
		switch m.state {
		case StateDropped:
			st.Dropped++
			st.Settled++
		case StatePublished:
			st.Settled++
		case StateParked:
			st.Settled++
			st.Parked++
			if m.reason == ReasonExpired {
				st.Expired++
			}
		}
	}
}

// readBucket reads the pending intents of one partition, in staging order, and its relay fence.
func (r judge) readBucket(ctx context.Context, b int64, s int) ([]intent, int64, error) {
	out, fence, _, err := r.scanBucket(ctx, b, s)
	return pendingOnly(out), fence, err
}

// pendingOnly returns the intents of rows that are not settled.
func pendingOnly(rows []intent) []intent {
	var out []intent
	for _, in := range rows {
		if in.state == "" {
			out = append(out, in)
		}
	}
	return out
}

// scanBucket reads every intent of one partition, in staging order (the settled ones with their
// state and key only), its relay fence, and how many rows the node returned: what a pass costs
// the node (Stats.RowsRead).
func (r judge) scanBucket(ctx context.Context, b int64, s int) ([]intent, int64, int, error) {
	iter := r.session.Query(r.bucket, b, s).WithContext(ctx).Consistency(r.cfg.consistency).PageSize(1000).Iter()
	var out []intent
	var fence int64
	var in intent
	var rf, sealedAt *int64
	var state, rec, lastErr, orderKey *string
	var expires, next *time.Time
	var committed *bool
	var attempts *int
	scanned := 0
	for iter.Scan(&in.namespace, &in.key, &in.fence, &in.owner, &in.stagedAt, &state, &rf, &rec,
		&expires, &sealedAt, &committed, &attempts, &next, &lastErr, &orderKey) {
		scanned++
		if rf != nil {
			fence = *rf
		}
		if in.namespace == "" {
			continue // the static row alone
		}
		if in.state = deref(state); in.state != "" {
			out = append(out, intent{bucket: b, shard: s, namespace: in.namespace, key: in.key, fence: in.fence,
				stagedAt: in.stagedAt, state: in.state})
			continue
		}
		in.record, in.expiresAt, in.nextAttempt, in.lastError = deref(rec), derefT(expires), derefT(next), deref(lastErr)
		in.sealed, in.committed = sealedAt != nil, committed != nil && *committed
		in.orderKey = deref(orderKey)
		in.attempts = 0
		if attempts != nil {
			in.attempts = *attempts
		}
		in.bucket, in.shard = b, s
		out = append(out, in)
	}
	if err := iter.Close(); err != nil {
		return nil, 0, scanned, fmt.Errorf("outbox: read bucket %d shard %d: %w", b, s, err)
	}
	sort.Slice(out, func(i, j int) bool { return stagedBefore(out[i], out[j]) })
	return out, fence, scanned, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefT(p *time.Time) time.Time {
	if p == nil || p.IsZero() || p.Unix() == 0 {
		return time.Time{}
	}
	return *p
}

// raise sets the partition's relay fence to the shard claim's, so a relay with an older fence
// finds its marks rejected. A higher fence there means a newer relay holds the shard.
func (r *Relay) raise(ctx context.Context, sh *shard, b int64, cur int64) error {
	if cur > sh.claim.Fence {
		return ErrFenced
	}
	// cur may be stale (a relay that found the partition through its arrivals has not read
	// the fence): a fence found lower than ours is raised all the same, ours is kept.
	for try := 0; ; try++ {
		stmt, args := r.st.raise, []any{r.fenceTTL(b), sh.claim.Fence, b, sh.id, sh.claim.Fence}
		if cur == 0 {
			stmt, args = r.st.raiseNull, args[:4]
		}
		applied, row, err := cas.UpdateIf(ctx, r.session.Query(stmt, args...).Consistency(r.cfg.consistency), r.cfg.serial)
		if err != nil {
			return fmt.Errorf("outbox: raise relay fence: %w", err)
		}
		if applied {
			return nil
		}
		found, _ := row["relay_fence"].(int64)
		switch {
		case found == sh.claim.Fence:
			return nil
		case found < sh.claim.Fence && found != cur && try == 0:
			cur = found
			continue
		}
		return fmt.Errorf("%w: relay fence of bucket %d is %v", ErrFenced, b, row["relay_fence"]) // raised meanwhile
	}
}

// fenceTTL is the TTL of a partition's relay fence: as long as any intent of the bucket may
// live (a record staged in it expires within a retention of its end, and its intent a grace
// later), so no intent outlives the fence that guards its marks.
func (r *Relay) fenceTTL(b int64) int {
	end := time.Unix(b, 0).Add(r.cfg.bucket)
	return r.cfg.ttlUntil(r.cfg.rowExpiry(end.Add(r.cfg.retention)))
}
