package lwt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt/cas"
)

// BatchEnd is how one claim of a batch ends: its status (COMPLETED, FAILED or RELEASED) and
// its result (COMPLETED), error message (FAILED) or last error (RELEASED).
type BatchEnd struct {
	Claim  *Claim
	Status Status
	Result []byte
}

// FinishBatch ends claims that one BeginBatch returned (they share a partition) with one
// conditional batch, each statement fenced by its claim's owner and fence, and returns one
// error per end, in order: nil when it is stored, ErrLeaseLost when the claim was taken over
// or its record expired (nothing stored for it), or the error that stopped the work.
//
// A batch rejected because some claims were lost is sent again without them. A batch whose
// outcome is unknown is read back at the serial consistency; one that did not apply is sent
// again with backoff while ctx lasts (give it a commit budget that outlives the caller's ctx:
// the work is done). An end that ctx stops is an *cas.OutcomeUnknownError when some send of it
// may have applied.
func (s *BatchStore) FinishBatch(ctx context.Context, ends []BatchEnd) []error {
	if err := s.checkCall(ctx); err != nil {
		return argcheck.Each(err, len(ends))
	}
	errs := make([]error, len(ends))
	claims := make([]*Claim, len(ends))
	for i, e := range ends {
		claims[i] = e.Claim
		switch {
		case e.Claim == nil:
			errs[i] = fmt.Errorf("%w: nil claim", ErrInvalidArgument)
		case e.Status != StatusCompleted && e.Status != StatusFailed && e.Status != StatusReleased:
			errs[i] = fmt.Errorf("%w: a claim cannot end as %q", ErrInvalidArgument, e.Status)
		case len(e.Result) > s.base.cfg.maxResult && e.Status == StatusCompleted:
			errs[i] = fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(e.Result), s.base.cfg.maxResult)
		case e.Result == nil:
			ends[i].Result = []byte{} // an empty blob, not a null cell (a tombstone)
		default:
			ends[i].Result = s.base.clip(e.Result)
		}
	}
	t := batchTransition{op: "finish", stmt: s.stmt.finish,
		args: func(i int, now time.Time, ttl int) []any {
			return []any{ttl, string(ends[i].Status), ends[i].Result, now}
		},
		settle: func(i int, r *Record) transitionState {
			return settleOwned(claims[i], r, r.Status == ends[i].Status)
		},
	}
	s.transition(ctx, t, claims, errs)
	for i, err := range errs {
		if err == nil {
			s.base.record(Observation{Kind: observedEnd[ends[i].Status], Key: claims[i].Key})
		}
	}
	return errs
}

// settleOwned reads one claim's state from its record: done when the record shows the
// transition (reached, by the caller's test), pending while it is still the claim's and
// STARTED, lost otherwise.
func settleOwned(c *Claim, r *Record, reached bool) transitionState {
	ours := r.Owner == c.Owner && r.Fence == c.Fence
	switch {
	case ours && reached:
		return transitionDone
	case ours && r.Status == StatusStarted:
		return transitionPending
	}
	return transitionLost
}

// observedEnd is the observation of each ending status.
var observedEnd = map[Status]ObservationKind{StatusCompleted: ObservedComplete, StatusFailed: ObservedFail, StatusReleased: ObservedRelease}

// RenewBatch rewrites the lease cell of each claim (all of one partition) with a fresh TTL,
// in one conditional batch, and returns one error per claim: nil when renewed, ErrLeaseLost
// when the claim was taken over, ended or expired. It is sent once more after a rejection
// caused by another claim of the batch; an unknown outcome is left for the next renewal.
func (s *BatchStore) RenewBatch(ctx context.Context, claims []*Claim) []error {
	if err := s.checkCall(ctx); err != nil {
		return argcheck.Each(err, len(claims))
	}
	errs := make([]error, len(claims))
	for i, c := range claims {
		if c == nil {
			errs[i] = fmt.Errorf("%w: nil claim", ErrInvalidArgument)
		}
	}
	until := s.base.now().Add(s.base.cfg.lease)
	t := batchTransition{op: "renew", stmt: s.stmt.renew, once: true,
		args: func(i int, _ time.Time, ttl int) []any { return []any{min(s.leaseTTL, ttl), claims[i].Owner} },
		settle: func(i int, r *Record) transitionState {
			// A read after an unknown outcome shows the renewed lease cell.
			return settleOwned(claims[i], r, r.Status == StatusStarted && r.LeaseOwner == claims[i].Owner)
		},
	}
	s.transition(ctx, t, claims, errs)
	for i, err := range errs {
		if err == nil {
			claims[i].LeaseUntil = until
		}
	}
	return errs
}

// transitionState is what a record read back says about one claim's transition.
type transitionState int

const (
	transitionDone    transitionState = iota + 1 // applied, now or by an earlier send
	transitionPending                            // still ours and STARTED: send it again
	transitionLost                               // fenced off: taken over, ended or expired
)

// batchTransition is one owner-fenced update sent for many claims of a partition.
type batchTransition struct {
	op   string
	stmt string
	// args are the statement's values before the record's key, for claim i.
	args func(i int, now time.Time, ttl int) []any
	// settle reads claim i's state from its record (zero when absent), lease cell included.
	settle func(i int, r *Record) transitionState
	// once: do not repeat a send whose outcome stays unknown (a renewal; the next one repeats it).
	once bool
}

// transition sends t for every claim whose errs entry is nil, until each is known to be done
// (nil) or lost (ErrLeaseLost), or ctx ends. A rejected batch is settled row by row and sent
// again for the claims still pending; it is the store's transition, for a batch.
func (s *BatchStore) transition(ctx context.Context, t batchTransition, claims []*Claim, errs []error) {
	pending, partition := s.pendingOfOnePartition(claims, errs)
	delay := 20 * time.Millisecond
	var last error
	unknown := false
	for len(pending) > 0 {
		sent, b := s.batchOf(t, claims, pending, errs)
		if len(sent) == 0 {
			return
		}
		applied, rows, err := s.sendTransition(ctx, t, partition, claims, sent, b)
		switch {
		case err == nil && applied:
			return
		case err == nil:
			waiting := s.settleSent(t, claims, sent, rows, errs)
			if len(waiting) < len(sent) {
				pending = waiting // the batch failed on claims now settled: send the rest at once
				continue
			}
			pending, last = waiting, fmt.Errorf("lwt: %s did not apply", t.op)
		case !resendable(err):
			for _, i := range sent {
				errs[i] = err
			}
			return
		default:
			unknown = unknown || errors.Is(err, ErrOutcomeUnknown)
			pending, last = sent, err
		}
		if t.once {
			failTransition(t.op, pending, errs, last, nil, false)
			return
		}
		if werr := loop.Sleep(ctx, delay); werr != nil {
			failTransition(t.op, pending, errs, last, werr, unknown)
			return
		}
		delay = min(delay*2, time.Second)
	}
}

// pendingOfOnePartition lists the claims still to send (their errs entry nil) and their
// partition; a claim of another partition, or whose key has another shape, gets
// ErrInvalidArgument instead.
func (s *BatchStore) pendingOfOnePartition(claims []*Claim, errs []error) ([]int, Key) {
	var pending []int
	for i, err := range errs {
		if err == nil {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	partition := claims[pending[0]].Key[:s.nParts]
	for _, i := range pending {
		if len(claims[i].Key) != s.nParts+1 || cacheKey(claims[i].Key[:s.nParts]) != cacheKey(partition) {
			errs[i] = fmt.Errorf("%w: the claims of one batch must share a partition", ErrInvalidArgument)
		}
	}
	return stillPending(pending, errs), partition
}

// sendTransition sends b, the batch of t for the sent claims, once; an unknown outcome is
// settled by reading their rows back, and counts as applied when every row shows t done.
func (s *BatchStore) sendTransition(ctx context.Context, t batchTransition, partition Key, claims []*Claim, sent []int,
	b *gocql.Batch) (bool, []cas.Row, error) {
	keys := make([]string, len(sent))
	for j, i := range sent {
		keys[j] = claims[i].Key[s.nParts].(string)
	}
	return cas.ResolveBatch(ctx, cas.BatchConditional{
		Op: t.op, Session: s.base.session, Batch: b, Read: s.readKeys(partition, keys),
		Applied: func(rows []cas.Row) bool {
			found := s.byKey(rows)
			for _, i := range sent {
				if t.settle(i, recordFromRow(found[claims[i].Key[s.nParts].(string)])) != transitionDone {
					return false
				}
			}
			return true
		},
		Patience: transitionPatience, Observe: s.base.observeCAS(partition),
	}, s.base.cfg.commit, s.base.cfg.serial)
}

// settleSent reads each sent claim's state from the rows a rejected batch returned: a lost
// claim gets ErrLeaseLost, a done one nothing, and the claims still pending are returned.
func (s *BatchStore) settleSent(t batchTransition, claims []*Claim, sent []int, rows []cas.Row, errs []error) (waiting []int) {
	found := s.byKey(rows)
	for _, i := range sent {
		switch t.settle(i, recordFromRow(found[claims[i].Key[s.nParts].(string)])) {
		case transitionDone:
		case transitionPending:
			waiting = append(waiting, i)
		default:
			s.base.record(Observation{Kind: ObservedLeaseLost, Key: claims[i].Key})
			errs[i] = ErrLeaseLost
		}
	}
	return waiting
}

// failTransition ends op for the pending claims with last, the error of their last send, and
// werr, why no more are sent (nil: op is sent once); when an outcome stayed unknown the error is
// a *cas.OutcomeUnknownError.
func failTransition(op string, pending []int, errs []error, last, werr error, unknown bool) {
	cause := last
	if werr != nil {
		cause = errors.Join(last, werr)
	}
	for _, i := range pending {
		if unknown {
			errs[i] = &cas.OutcomeUnknownError{Op: op, Err: cause}
		} else {
			errs[i] = fmt.Errorf("lwt: %s: %w", op, cause)
		}
	}
}

// batchOf builds the batch of t for the pending claims whose record has not expired; an
// expired one gets ErrLeaseLost.
func (s *BatchStore) batchOf(t batchTransition, claims []*Claim, pending []int, errs []error) ([]int, *gocql.Batch) {
	now := s.base.now()
	b := s.base.session.NewBatch(gocql.UnloggedBatch)
	var sent []int
	for _, i := range pending {
		c := claims[i]
		ttl := ttlSeconds(c.ExpiresAt, now)
		if ttl <= 0 {
			s.base.record(Observation{Kind: ObservedLeaseLost, Key: c.Key})
			errs[i] = ErrLeaseLost
			continue
		}
		b.Query(t.stmt, append(append(t.args(i, now, ttl), c.Key...), c.Owner, c.Fence)...)
		sent = append(sent, i)
	}
	return sent, b
}

func stillPending(pending []int, errs []error) []int {
	out := pending[:0]
	for _, i := range pending {
		if errs[i] == nil {
			out = append(out, i)
		}
	}
	return out
}
