package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// judge settles intents by their records; the relay and the operator's listing share it.
type judge struct {
	session *gocql.Session
	cfg     config
	read    string // an operation's record: its status, owner, fence and outbox cell (recordQuery)
	bucket  string // the intents of one partition, and its relay fence
	copy    string // the copy of a run's events in its intent
}

func newJudge(session *gocql.Session, cfg config) judge {
	records, intents := cfg.q.records, cfg.q.intents
	return judge{session: session, cfg: cfg,
		read: "SELECT status, owner, fence, " + ColumnName + " FROM " + records + " WHERE namespace = ? AND key = ?",
		bucket: "SELECT namespace, key, fence, owner, staged_at, state, relay_fence, record, expires_at, writetime(events)," +
			" committed, attempts, next_attempt, last_error, order_key FROM " + intents + " WHERE bucket = ? AND shard = ?",
		copy: "SELECT events FROM " + intents + " WHERE bucket = ? AND shard = ? AND namespace = ? AND key = ? AND fence = ?",
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

// settle decides an intent. One a relay already saw committed is published from the copy in
// its row, record or not. Otherwise its record decides: a QUORUM read that shows the intent's
// claim COMPLETED is final (a completed record never changes); anything else is read again at
// serial, which completes a completion in flight, before a verdict. A record that is gone, or
// shows another claim, once the intent's record may have expired, proves nothing: the intent's
// copy of its events (taken when the run sealed its completion) is parked rather than dropped.
func (r judge) settle(ctx context.Context, in intent) settled {
	if in.committed {
		return r.fromCopy(ctx, in, publish)
	}
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
	if !found && r.mayStillCommit(in) {
		return settled{in: in, dec: wait}
	}
	if !found || !r.sameClaim(in, row) {
		if r.mayHaveExpired(in) && in.arrival {
			// Only the intent's row says whether the run sealed a copy of its events: the
			// bucket's last sweep reads it and decides.
			return settled{in: in, dec: wait}
		}
		if r.mayHaveExpired(in) {
			if in.sealed {
				return r.fromCopy(ctx, in, expired)
			}
			// No copy: the run never sealed its completion, so it never sent it.
		}
		return settled{in: in, dec: drop}
	}
	if v := r.verdict(in, row); v != publish {
		return settled{in: in, dec: v}
	}
	return r.committed(in, row)
}

// casSlack is how long after a conditional write was sent the node may still apply it: its
// coordinator retries a contended round until its CAS contention timeout (1 s by default) and
// waits for replicas until its write timeout (2 s).
const casSlack = 10 * time.Second

// mayStillCommit reports whether the run of an intent whose record a serial read did not find
// may still commit it. A run of lwt.WithRepeatableFunction has no record until its one insert
// commits, and sends that insert no later than one horizon after staging (Stage refuses a run
// that could send it later). The stager's clock and ours differ by less than half a horizon, so
// once two horizons and the node's own slack have passed since staged_at, no insert of the run
// can still apply: it died or failed before its commit. A claimed run's record exists before
// its intent, so for it the answer only delays a verdict on a record deleted by an operator.
func (r judge) mayStillCommit(in intent) bool {
	return r.cfg.now().Before(in.stagedAt.Add(2*r.cfg.horizon + casSlack))
}

// mayHaveExpired reports whether the intent's record may have expired by now: a record gone
// or re-claimed then no longer tells whether the intent's run committed. Half the horizon is
// the clock difference allowed between stagers and relays.
func (r judge) mayHaveExpired(in intent) bool {
	return !in.expiresAt.IsZero() && !r.cfg.now().Before(in.expiresAt.Add(-r.cfg.horizon/2))
}

// fromCopy settles in as dec with the events copied to its row.
func (r judge) fromCopy(ctx context.Context, in intent, dec decision) settled {
	var b []byte
	err := r.session.Query(r.copy, in.bucket, in.shard, in.namespace, in.key, in.fence).WithContext(ctx).
		Consistency(r.cfg.consistency).Scan(&b)
	if err != nil {
		return settled{in: in, err: fmt.Errorf("outbox: read the events' copy of %q/%q: %w", in.namespace, in.key, err)}
	}
	if len(b) == 0 {
		return settled{in: in, err: fmt.Errorf("%w: %q/%q has no copy of its events", ErrMalformedIntent, in.namespace, in.key)}
	}
	c, err := decodeCell(b)
	if err != nil {
		return settled{in: in, err: fmt.Errorf("outbox: %q/%q: %w", in.namespace, in.key, err)}
	}
	return settled{in: in, dec: dec, msgs: c.messages(in.namespace, in.key, in.fence), cell: b}
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

func (r judge) sameClaim(in intent, row cas.Row) bool {
	owner, _ := row["owner"].(gocql.UUID)
	fence, _ := row["fence"].(int64)
	return owner == in.owner && fence == in.fence
}

func (r judge) verdict(in intent, row cas.Row) decision {
	status, _ := row["status"].(string)
	if !r.sameClaim(in, row) {
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
	return settled{in: in, dec: publish, msgs: c.messages(in.namespace, in.key, in.fence), cell: b}
}
