package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// A PollHandler applies the effects of the claimed messages of one poll at once, in the order
// given, and returns one error per message (nil: its effect is applied), or nil when all
// succeeded. Its effects must be idempotent per message (a message whose end could not be
// recorded is delivered again): events.Log.RecordBatch, keyed by the message ids, is.
type PollHandler func(ctx context.Context, msgs []Message) []error

// ErrPollResult says a PollHandler returned neither nil nor one error per message; every
// message of the call is then Failed, released for redelivery.
var ErrPollResult = errors.New("guard: poll handler returned the wrong number of errors")

// ProcessPoll processes the messages of one poll as ProcessBatch does, with one call of apply
// for all the messages it claimed (and those its fast path admits) instead of a handler call
// per message: the claims and the ends cost one conditional batch per partition of
// processed_messages_bucketed each, as in ProcessBatch, and apply can write the effects of the
// whole poll together, e.g. one events.Log.RecordBatch, so a poll of N late events of a
// counter costs a few Paxos rounds rather than N. Messages past WithMaxAttempts are not given
// to apply and are reported Poison. Results, outcomes and leases are ProcessBatch's; a
// message whose lease was lost while apply ran is Failed with lwt.ErrLeaseLost and not
// ended. ByKey turns a per-message Handler into a PollHandler that runs the handlers of
// different keys concurrently.
func (g *Guard) ProcessPoll(ctx context.Context, msgs []Message, apply PollHandler) ([]BatchResult, error) {
	if err := g.checkRun(ctx, apply == nil, "poll handler"); err != nil {
		return nil, err
	}
	return g.processBatch(ctx, msgs, nil, apply), nil
}

// pollContexts is the context value through which apply's ctx carries each message's own
// context (its claim, canceled if its lease is lost), in the order of apply's msgs.
type pollContexts struct{ ctxs []context.Context }

type pollContextsKey struct{}

// applyPoll calls apply once for the jobs that will run (not those past their attempts) and
// returns the handler that reports, per message, what apply said.
func (g *Guard) applyPoll(ctx context.Context, jobs []batchJob, ctxs []context.Context, apply PollHandler) Handler {
	var msgs []Message
	var mctxs []context.Context
	at := map[*batchGroup]map[int]int{} // group, message number -> position in msgs
	for k, jb := range jobs {
		if c := jb.grp.claims[jb.j]; c != nil && c.Attempts > g.cfg.maxAttempts {
			continue // runOne ends it as poison without running it
		}
		if at[jb.grp] == nil {
			at[jb.grp] = map[int]int{}
		}
		at[jb.grp][jb.j] = len(msgs)
		msgs, mctxs = append(msgs, jb.grp.msgs[jb.j]), append(mctxs, ctxs[k])
	}
	var errs []error
	if len(msgs) > 0 {
		errs = apply(context.WithValue(ctx, pollContextsKey{}, pollContexts{mctxs}), msgs)
	}
	if errs != nil && len(errs) != len(msgs) {
		bad := fmt.Errorf("%w: %d errors for %d messages", ErrPollResult, len(errs), len(msgs))
		errs = make([]error, len(msgs))
		for i := range errs {
			errs[i] = bad
		}
	}
	// runAll calls the handler with each job's message in order; the jobs are told apart by
	// their group and number, which runOne and runFast do not pass, so walk them in order.
	next := 0
	order := make([]int, 0, len(msgs))
	for _, jb := range jobs {
		if p, ok := at[jb.grp][jb.j]; ok {
			order = append(order, p)
		}
	}
	return func(context.Context, Message) error {
		p := order[next]
		next++
		if errs == nil {
			return nil
		}
		return errs[p]
	}
}

// ByKey returns a PollHandler that runs handler for each message, the messages of one key
// (key(m)) one after the other in the order given and those of different keys concurrently,
// at most parallel at once (at least 1). Each handler's ctx is its message's own, carrying its
// claim (lwt.ClaimFromContext) and canceled if its lease is lost, as in ProcessBatch.
func ByKey(key func(Message) string, parallel int, handler Handler) PollHandler {
	return func(ctx context.Context, msgs []Message) []error {
		errs := make([]error, len(msgs))
		pc, _ := ctx.Value(pollContextsKey{}).(pollContexts)
		ctxOf := func(i int) context.Context {
			if len(pc.ctxs) == len(msgs) {
				return pc.ctxs[i]
			}
			return ctx
		}
		lanes := map[string][]int{}
		var keys []string
		for i, m := range msgs {
			k := key(m)
			if _, ok := lanes[k]; !ok {
				keys = append(keys, k)
			}
			lanes[k] = append(lanes[k], i)
		}
		sem := make(chan struct{}, max(parallel, 1))
		var wg sync.WaitGroup
		var once sync.Once
		var panicked any
		for _, k := range keys {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() {
					// A handler's panic reaches the caller's goroutine, where ProcessPoll
					// releases the poll's claims, as ProcessBatch does.
					if p := recover(); p != nil {
						once.Do(func() { panicked = p })
					}
					<-sem
				}()
				for _, i := range lanes[k] {
					errs[i] = handler(ctxOf(i), msgs[i])
				}
			})
		}
		wg.Wait()
		if panicked != nil {
			panic(panicked)
		}
		return errs
	}
}
