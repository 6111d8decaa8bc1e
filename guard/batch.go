package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cassdedup/cassdedup/lwt"
)

// BatchResult is what ProcessBatch did with one message: the outcome and error Process would
// have returned for it.
type BatchResult struct {
	Outcome Outcome
	Err     error
}

// ProcessBatch processes the messages of one poll as Process processes one, at two
// lightweight transactions per group of messages instead of two per message: the messages that
// share a Cassandra partition of processed_messages_bucketed (a broker partition, a window of
// message time and a bucket of ids; see WithBatchWindow) are claimed with one conditional batch
// of at most lwt.MaxBatchRows rows, the handler runs for each claimed message in the order
// given, and the successes are recorded and the failures released with one more conditional
// batch. A message that the claim batch finds processed, held by another consumer, released or
// expired is settled from the rows the rejected batch returns, as Process settles it, and the
// others are claimed again.
//
// It returns one result per message, in order: Processed and Duplicate (acknowledge),
// InProgress and Failed (leave for redelivery; commit a broker offset only below the first such
// message), Poison (dead-letter). Every message needs a Time (see Message); a message without
// one, or otherwise invalid, gets Failed with ErrInvalidMessage and nothing is stored for it. A
// message given twice in one call is handled once; its copies get Duplicate once it is
// processed, and its result otherwise. The error is for the call: a nil handler
// (ErrInvalidOption), or ErrClockOffset while the guard's offset from the cluster's clock is
// not known well enough (nothing run or stored; deliver the messages again).
//
// Leases, fencing, poison counting (WithMaxAttempts) and outcome-unknown resolution keep their
// per-message meaning; leases are judged by Cassandra's clock (see lwt.BatchStore). Handlers
// find their claim with lwt.ClaimFromContext. For a scope declared with Own, the messages its
// pre-check answers clearly new take the fast path: their handlers run without a claim and they
// are recorded with one unlogged batch per partition (docs/fastpath.md). The records live in
// processed_messages_bucketed, which Process of a message with a Time consults for completed
// records; ProcessBatch does not read Process's records, and neither waits for the other's claim
// in flight: deliver a scope's messages through one of the two (docs/guard.md, "One path per
// scope"), or a message delivered through both may run its handler twice.
func (g *Guard) ProcessBatch(ctx context.Context, msgs []Message, handler Handler) ([]BatchResult, error) {
	if err := g.checkRun(ctx, handler == nil, "handler"); err != nil {
		return nil, err
	}
	return g.processBatch(ctx, msgs, handler, nil), nil
}

// checkRun checks a call of ProcessBatch or ProcessPoll: the guard and ctx (checkCall), that it
// was given its handler (what names it in the error), then the guard's clock.
func (g *Guard) checkRun(ctx context.Context, missing bool, what string) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if missing {
		return fmt.Errorf("%w: nil %s", ErrInvalidOption, what)
	}
	// Windows, layouts and the fast path's horizon are judged by the cluster's time.
	return g.checkClock(ctx)
}

// processBatch is ProcessBatch and ProcessPoll: claims, then runAll, then the ends.
func (g *Guard) processBatch(ctx context.Context, msgs []Message, handler Handler, apply PollHandler) []BatchResult {
	results := make([]BatchResult, len(msgs))
	groups, copies := g.group(ctx, msgs, results)
	for _, grp := range groups {
		grp.admit(ctx, g)
		defer grp.leave()
	}
	var wg sync.WaitGroup
	for _, grp := range groups {
		wg.Go(func() { grp.claim(ctx, g) })
	}
	wg.Wait()
	g.runAll(ctx, groups, handler, apply)
	for _, grp := range groups {
		wg.Go(func() { grp.finish(ctx, g) })
	}
	wg.Wait()
	for _, grp := range groups {
		for j, i := range grp.index {
			results[i] = grp.results[j]
		}
	}
	for i, first := range copies {
		results[i] = results[first]
		if results[first].Outcome == Processed {
			results[i] = BatchResult{Outcome: Duplicate}
		}
	}
	return results
}

// batchGroup is the messages of one call that share a partition: one claim batch, one finish.
type batchGroup struct {
	partition lwt.Key
	msgs      []Message
	index     []int // each message's position in the call
	results   []BatchResult
	claims    []*lwt.Claim // set for the messages claimed now
	ends      []lwt.BatchEnd
	endOf     []int       // the ends' message numbers within the group
	passes    []*lwt.Pass // each message's place among the calls running here; nil if refused
	fastDone  []int       // the fast-path messages whose handler succeeded, to record
}

// partitionOf is m's partition in processed_messages_bucketed: its window and bucket in the
// layout its group has for its Time. It derives from m's scope, Time and ID only, so every
// delivery and every producer duplicate of m computes the same one.
func (g *Guard) partitionOf(ctx context.Context, m Message) (lwt.Key, error) {
	l, err := g.layoutOf(ctx, m.Group, m.Time)
	if err != nil {
		return nil, err
	}
	start, bucket := l.place(m.Time.Unix(), m.ID)
	return lwt.Key{m.Group, m.Topic, m.Partition, start, bucket}, nil
}

// group validates msgs, fills results for the invalid ones, and splits the rest into groups of
// at most lwt.MaxBatchRows messages of one partition, in order. copies maps each repeated
// message's position to its first one's.
func (g *Guard) group(ctx context.Context, msgs []Message, results []BatchResult) (groups []*batchGroup, copies map[int]int) {
	copies = map[int]int{}
	first := map[string]int{}
	open := map[string]*batchGroup{}
	for i, m := range msgs {
		if err := g.validateBatchMessage(m); err != nil {
			results[i] = BatchResult{Outcome: Failed, Err: err}
			continue
		}
		scope := fmt.Sprintf("%d:%s/%d:%s/%d", len(m.Group), m.Group, len(m.Topic), m.Topic, m.Partition)
		if f, seen := first[scope+"/"+m.ID]; seen {
			copies[i] = f
			continue
		}
		p, err := g.partitionOf(ctx, m)
		if err != nil {
			results[i] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: place %q: %w", m.ID, err)}
			continue
		}
		first[scope+"/"+m.ID] = i
		pk := fmt.Sprintf("%s/%d/%d", scope, p[3], p[4])
		grp := open[pk]
		if grp == nil || len(grp.msgs) == lwt.MaxBatchRows {
			grp = &batchGroup{partition: p}
			open[pk] = grp
			groups = append(groups, grp)
		}
		grp.msgs = append(grp.msgs, m)
		grp.index = append(grp.index, i)
	}
	return groups, copies
}

func (g *Guard) validateBatchMessage(m Message) error {
	if err := m.validate(g.cfg.maxPayload); err != nil {
		return err
	}
	if m.Time.IsZero() {
		return fmt.Errorf("%w: %q has no time; ProcessBatch groups messages by it", ErrInvalidMessage, m.ID)
	}
	if ahead := m.Time.Sub(g.cfg.Now()); ahead > lwt.MaxClockSkew {
		// Its partition could still move with a layout change; Process takes such a message.
		return fmt.Errorf("%w: %w: %q is %v ahead of the clock (the limit is %v)",
			ErrInvalidMessage, ErrFutureMessage, m.ID, ahead, lwt.MaxClockSkew)
	}
	return nil
}

// claim claims the group's messages that take the LWT path with BeginBatch and settles the ones
// it did not claim.
func (grp *batchGroup) claim(ctx context.Context, g *Guard) {
	grp.claims = make([]*lwt.Claim, len(grp.msgs))
	var items []lwt.BatchItem
	var of []int // the items' message numbers within the group
	for j, m := range grp.msgs {
		if grp.results[j].Outcome == 0 && !grp.fast(j) {
			items, of = append(items, item(m)), append(of, j)
		}
	}
	if len(items) == 0 {
		return
	}
	begun, err := g.batch.BeginBatch(ctx, grp.partition, items)
	for k, j := range of {
		m := grp.msgs[j]
		switch {
		case err != nil:
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: claim %q: %w", m.ID, err)}
		case begun[k].Claim != nil:
			grp.claims[j] = begun[k].Claim
		case begun[k].Record != nil && begun[k].Record.Status == lwt.StatusFailed:
			grp.results[j] = BatchResult{Outcome: Poison, Err: &PoisonError{LastError: string(begun[k].Record.Result)}}
		case begun[k].Record != nil:
			grp.results[j] = BatchResult{Outcome: Duplicate}
		default:
			out, ferr := g.failure(m, begun[k].Err)
			grp.results[j] = BatchResult{Outcome: out, Err: ferr}
		}
	}
}

// item is m's BatchItem: its id and the fingerprint of its payload.
func item(m Message) lwt.BatchItem {
	it := lwt.BatchItem{Key: m.ID}
	if m.Payload != nil {
		it.Fingerprint = lwt.Fingerprint(m.Payload)
	}
	return it
}

// finish records the group's fast-path messages and ends its claims with FinishBatch, and
// records each message's outcome.
func (grp *batchGroup) finish(ctx context.Context, g *Guard) {
	// The records and ends are written even if the caller's ctx has ended: the handlers have run.
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lwt.DefaultCommitTimeout)
	defer cancel()
	grp.recordFast(endCtx, g)
	if len(grp.ends) == 0 {
		return
	}
	errs := g.batch.FinishBatch(endCtx, grp.ends)
	for k, j := range grp.endOf {
		if err := errs[k]; err != nil {
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: record %q: %w", grp.msgs[j].ID, errors.Join(grp.results[j].Err, err))}
		}
	}
}

// end queues the end of message j's claim, with the result the message gets once it is stored.
func (grp *batchGroup) end(j int, status lwt.Status, message string, res BatchResult) {
	grp.ends = append(grp.ends, lwt.BatchEnd{Claim: grp.claims[j], Status: status, Result: []byte(message)})
	grp.endOf = append(grp.endOf, j)
	grp.results[j] = res
}

// BatchStats returns a snapshot of the counters of ProcessBatch's records; Stats has those of
// Process.
func (g *Guard) BatchStats() lwt.Stats {
	if g == nil {
		return lwt.Stats{}
	}
	return g.batch.Stats()
}
