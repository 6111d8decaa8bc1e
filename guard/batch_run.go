package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cassdedup/cassdedup/internal/loop"
	"github.com/cassdedup/cassdedup/lwt"
)

// batchJob is one claimed message of a ProcessBatch call.
type batchJob struct {
	grp *batchGroup
	j   int // the message's number within its group
	pos int // its position in the call
}

// runAll runs the handler for every claimed message of groups, in the order the caller gave
// them, while one goroutine renews the claims' leases, and queues each claim's end. With
// apply set (ProcessPoll), apply runs first, once, for all of them, and each message's handler
// returns what apply said of it.
func (g *Guard) runAll(ctx context.Context, groups []*batchGroup, handler Handler, apply PollHandler) {
	var jobs []batchJob
	for _, grp := range groups {
		for j, c := range grp.claims {
			if c != nil || grp.fast(j) {
				jobs = append(jobs, batchJob{grp, j, grp.index[j]})
			}
		}
	}
	if len(jobs) == 0 {
		return
	}
	slices.SortFunc(jobs, func(a, b batchJob) int { return cmp.Compare(a.pos, b.pos) })
	// Each message's ctx carries its claim, and is canceled if its lease is lost while it
	// waits for its turn or runs.
	cancels := map[*lwt.Claim]context.CancelCauseFunc{}
	ctxs := make([]context.Context, len(jobs))
	for k, jb := range jobs {
		c := jb.grp.claims[jb.j]
		if c == nil { // the fast path: no claim, no lease
			ctxs[k] = ctx
			continue
		}
		var cancel context.CancelCauseFunc
		ctxs[k], cancel = context.WithCancelCause(lwt.ContextWithClaim(ctx, c))
		cancels[c] = cancel
		defer cancel(nil)
	}
	stop := g.renewBatches(context.WithoutCancel(ctx), groups, cancels)
	defer stop()
	defer func() {
		if p := recover(); p != nil {
			stop()
			g.releaseUnended(groups)
			panic(p)
		}
	}()
	if apply != nil {
		handler = g.applyPoll(ctx, jobs, ctxs, apply)
	}
	for k, jb := range jobs {
		if jb.grp.claims[jb.j] == nil {
			g.runFast(ctxs[k], jb.grp, jb.j, handler)
			continue
		}
		g.runOne(ctxs[k], jb.grp, jb.j, handler)
	}
}

// runOne runs the handler for message j of grp under its claim and queues the claim's end, as
// Guard.run decides it for Process: poison past the attempts, released on a handler error,
// completed on success.
func (g *Guard) runOne(ctx context.Context, grp *batchGroup, j int, handler Handler) {
	c, m := grp.claims[j], grp.msgs[j]
	if c.Attempts > g.cfg.maxAttempts {
		last := ""
		if c.Previous != nil {
			last = string(c.Previous.Result)
		}
		msg := fmt.Sprintf("%d attempts used; last error: %s", c.Attempts-1, last)
		grp.end(j, lwt.StatusFailed, msg, BatchResult{Outcome: Poison, Err: &PoisonError{LastError: msg}})
		return
	}
	err := handler(ctx, m)
	switch {
	case errors.Is(context.Cause(ctx), lwt.ErrLeaseLost):
		// Another consumer took the message over: its record is theirs to end.
		grp.results[j] = BatchResult{Outcome: Failed, Err: fmt.Errorf("guard: %q: %w", m.ID, lwt.ErrLeaseLost)}
	case err != nil && c.Attempts >= g.cfg.maxAttempts:
		grp.end(j, lwt.StatusFailed, err.Error(), BatchResult{Outcome: Poison, Err: &PoisonError{Attempts: c.Attempts, LastError: err.Error(), Err: err}})
	case err != nil:
		grp.end(j, lwt.StatusReleased, err.Error(), BatchResult{Outcome: Failed, Err: err})
	default:
		grp.end(j, lwt.StatusCompleted, "", BatchResult{Outcome: Processed})
	}
}

// releaseUnended releases every claim of groups that has no end queued, after a handler
// panicked, so redeliveries need not wait for the leases. The ends already queued are written.
func (g *Guard) releaseUnended(groups []*batchGroup) {
	for _, grp := range groups {
		ended := map[int]bool{}
		for _, j := range grp.endOf {
			ended[j] = true
		}
		for j, c := range grp.claims {
			if c != nil && !ended[j] {
				grp.end(j, lwt.StatusReleased, "panic", BatchResult{Outcome: Failed, Err: errors.New("guard: handler panicked")})
			}
		}
		grp.finish(context.Background(), g)
	}
}

// renewBatches starts the goroutine that renews the leases of every group's claims each third
// of the lease until stop is called, and cancels a message's ctx with lwt.ErrLeaseLost when
// its lease is lost. stop ends the goroutine and waits for it.
func (g *Guard) renewBatches(ctx context.Context, groups []*batchGroup, cancels map[*lwt.Claim]context.CancelCauseFunc) (stop func()) {
	return loop.Every(g.cfg.lease/3, func() bool {
		for _, grp := range groups {
			var live []*lwt.Claim
			for _, c := range grp.claims {
				if c != nil {
					live = append(live, c)
				}
			}
			rctx, cancel := context.WithTimeout(ctx, g.cfg.lease/3)
			errs := g.batch.RenewBatch(rctx, live)
			cancel()
			for k, err := range errs {
				if errors.Is(err, lwt.ErrLeaseLost) {
					cancels[live[k]](lwt.ErrLeaseLost)
				}
			}
		}
		return true
	})
}
