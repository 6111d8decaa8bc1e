package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// admit registers each message of the group among the calls running in this process and asks
// the pre-check of its scope, if the guard owns it (Own), whether it is clearly new: those take
// the fast path, the others the conditional batches. A message already running here gets
// InProgress, as Process gives it.
func (grp *batchGroup) admit(ctx context.Context, g *Guard) {
	grp.results = make([]BatchResult, len(grp.msgs))
	grp.passes = make([]*lwt.Pass, len(grp.msgs))
	for j, m := range grp.msgs {
		p, err := g.store.Enter(ctx, m.key(), m.Time)
		if err != nil {
			out, ferr := g.failure(m, err)
			grp.results[j] = BatchResult{Outcome: out, Err: ferr}
			continue
		}
		grp.passes[j] = p
	}
}

// leave ends the group's places among the calls running here, once its records are written.
func (grp *batchGroup) leave() {
	for _, p := range grp.passes {
		if p != nil {
			p.Leave()
		}
	}
}

// fast reports whether message j takes the fast path.
func (grp *batchGroup) fast(j int) bool { return grp.passes[j] != nil && grp.passes[j].ClearlyNew() }

// runFast runs the handler of fast-path message j without a claim, and queues its record if it
// succeeded. A failure writes nothing: the redelivery takes the LWT path (the pre-check
// remembers the id) and runs the handler again.
func (g *Guard) runFast(ctx context.Context, grp *batchGroup, j int, handler Handler) {
	// The handler may not outlive the lease the message was admitted under.
	ctx, cancel := context.WithDeadline(ctx, grp.passes[j].Deadline())
	defer cancel()
	if err := handler(ctx, grp.msgs[j]); err != nil {
		grp.passes[j].Failed()
		grp.results[j] = BatchResult{Outcome: Failed, Err: err}
		return
	}
	grp.fastDone = append(grp.fastDone, j)
	grp.results[j] = BatchResult{Outcome: Processed}
}

// recordFast records the group's succeeded fast-path messages: one unlogged batch of plain
// writes into their partition (resolved before the handlers ran) while the guard still owns the
// scope at the epoch they were admitted under, sent before the lease's deadline or not at all,
// and otherwise conditional claims completed at once, which cannot overwrite a record another
// owner made meanwhile.
func (grp *batchGroup) recordFast(ctx context.Context, g *Guard) {
	var owned, stale []int
	var deadline time.Time
	for _, j := range grp.fastDone {
		// Held until the write ends, so Disown does not release the scope's server lease
		// while the record is on its way.
		if d, done, ok := grp.passes[j].Hold(); ok && grp.passes[j].Epoch() == grp.passes[grp.fastDone[0]].Epoch() {
			defer done()
			if deadline.IsZero() || d.Before(deadline) {
				deadline = d
			}
			owned = append(owned, j)
		} else {
			if ok {
				done()
			}
			stale = append(stale, j)
		}
	}
	if len(owned) > 0 {
		grp.putOwned(ctx, g, owned, deadline)
	}
	if len(stale) > 0 {
		grp.recordStale(ctx, g, stale)
	}
}

// putOwned writes the records of the owned messages, whose ownership was just checked: a write
// sent after deadline could reach the table after the next owner's warm-up read it.
func (grp *batchGroup) putOwned(ctx context.Context, g *Guard, owned []int, deadline time.Time) {
	ctx, cancel := lwt.DeadlineContext(ctx, deadline)
	defer cancel()
	items := make([]lwt.BatchItem, len(owned))
	for k, j := range owned {
		items[k] = item(grp.msgs[j])
	}
	if err := g.batch.PutCompletedBatch(ctx, grp.partition, items, nil, grp.passes[owned[0]].Epoch()); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("the lease's deadline passed: %w", err)
		}
		for _, j := range owned {
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: record %q: %w", grp.msgs[j].ID, err)}
		}
	}
}

// recordStale records fast-path messages whose scope changed hands while they ran: each is
// claimed and completed by LWT, unless a record is found (the message ran in two places: the
// guard counts it and keeps that record).
func (grp *batchGroup) recordStale(ctx context.Context, g *Guard, stale []int) {
	items := make([]lwt.BatchItem, len(stale))
	for k, j := range stale {
		items[k] = item(grp.msgs[j])
	}
	begun, err := g.batch.BeginBatch(ctx, grp.partition, items)
	var ends []lwt.BatchEnd
	var endOf []int
	for k, j := range stale {
		switch {
		case err != nil:
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: record %q: %w", grp.msgs[j].ID, err)}
		case begun[k].Claim != nil:
			grp.passes[j].Stale(false)
			ends, endOf = append(ends, lwt.BatchEnd{Claim: begun[k].Claim, Status: lwt.StatusCompleted}), append(endOf, j)
		case begun[k].Record != nil:
			grp.passes[j].Stale(true)
		default:
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: record %q: %w", grp.msgs[j].ID, begun[k].Err)}
		}
	}
	if len(ends) == 0 {
		return
	}
	for k, err := range g.batch.FinishBatch(ctx, ends) {
		if err != nil {
			j := endOf[k]
			grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: record %q: %w", grp.msgs[j].ID, errors.Join(err))}
		}
	}
}
