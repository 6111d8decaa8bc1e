package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// outageProbes is how many publications in a row may fail other than by a rejection, with
// none accepted, before the relay takes the publisher for down and leaves the rest of the bucket for a later pass.
const outageProbes = 3

// errNotTried marks the events of a pass that stopped publishing (the publisher looked down,
// or the lease ended): they stay pending, no attempt counted.
var errNotTried = errors.New("outbox: not published in this pass")

// errWholeCall marks the error of a Publish call that carried the events of several operations
// and failed as a whole (no PublishErrors): it says nothing of any one of them, so it never
// counts toward parking them.
var errWholeCall = errors.New("outbox: the whole publish call failed")

// rejection reports whether err is a publication's failure that is the events' own and counts
// toward parking them: the publisher rejected them for good (ErrRejected) or panicked on them,
// for them alone (per message, or in a call that carried nothing else). A timeout, a context's
// end, or a call that failed as a whole (the broker unreachable) is never the events' own: it
// backs off and the events stay pending, however long it lasts.
func rejection(err error) bool {
	switch {
	case errors.Is(err, errWholeCall), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	}
	return errors.Is(err, ErrRejected) || errors.Is(err, ErrPublisherPanic)
}

// publishDue publishes the due intents of a bucket and returns their marks: all of them at
// once, in staging order; under WithKeyOrder in waves of one intent per key
// (publishInKeyOrder, keyorder.go), which the unordered publication never passes through.
func (r *Relay) publishDue(ctx context.Context, sh *shard, due []settled, st *Stats) ([]mark, error) {
	if r.cfg.keyOrder {
		return r.publishInKeyOrder(ctx, sh, due, st)
	}
	outcome, pst, err := r.publishAll(ctx, sh, due)
	st.add(pst)
	return r.afterPublish(due, outcome, st), err
}

// publishAll publishes the committed intents of one bucket in staging order and returns each
// one's error (nil once accepted). Intents never tried go in batches of up to WithPublishBatch
// messages; an intent rejected before goes alone, so a poison event fails only itself, and so
// do the intents of a call the publisher rejected as a whole. A Publisher that reports per
// message (PublishErrors) gets only the failed intents retried.
func (r *Relay) publishAll(ctx context.Context, sh *shard, due []settled) ([]error, Stats, error) {
	out := make([]error, len(due))
	var st Stats
	var errs []error
	var t publishTally
	alone := 0 // the intents before it that were tried in a batch go alone now
	for i := 0; i < len(due); {
		j := r.callEnd(due, i, alone)
		if err := r.renewIfDue(ctx, sh); err != nil || t.outage() {
			for k := i; k < len(due); k++ {
				out[k] = errNotTried
			}
			return out, st, errors.Join(append(errs, err)...)
		}
		msgs := messagesOf(due[i:j])
		perr := r.publishOnce(ctx, sh, msgs, &st)
		if j-i > 1 && rejection(perr) && !isPublishErrors(perr) {
			// The publisher rejected the call as a whole, not saying which operation it
			// refuses: publish each of them alone, so that only that one fails.
			alone = j
			continue
		}
		spreadErrors(out[i:j], due[i:j], len(msgs), perr)
		t.count(out[i:j], due[i:j], &st)
		if perr != nil {
			errs = append(errs, fmt.Errorf("outbox: publish: %w", perr))
		}
		i = j
	}
	switch {
	case t.accepted > 0:
		r.transient.Store(0)
	case len(errs) > 0:
		r.transient.Add(1) // every publication of the pass failed: the next ones wait longer
	}
	return out, st, errors.Join(errs...)
}

// callEnd is where the Publish call that starts at due[i] ends: intents never tried go together
// up to WithPublishBatch messages, any other intent (and one at or after alone's start) alone.
func (r *Relay) callEnd(due []settled, i, alone int) int {
	j := i + 1
	if due[i].in.attempts == 0 && i >= alone {
		n := len(due[i].msgs)
		for j < len(due) && due[j].in.attempts == 0 && n+len(due[j].msgs) <= r.cfg.publishBatch {
			n += len(due[j].msgs)
			j++
		}
	}
	return j
}

// messagesOf lists the messages of the intents of one Publish call, in order.
func messagesOf(call []settled) []Message {
	var msgs []Message
	for _, v := range call {
		msgs = append(msgs, v.msgs...)
	}
	return msgs
}

// spreadErrors gives each intent of one Publish call of n messages its error: its messages'
// errors when the publisher reported per message (PublishErrors), else the call's, marked as
// the whole call's when the call carried more than one intent.
func spreadErrors(out []error, call []settled, n int, perr error) {
	var per *PublishErrors
	if errors.As(perr, &per) && len(per.Errs) == n {
		off := 0
		for k := range call {
			out[k] = errors.Join(per.Errs[off : off+len(call[k].msgs)]...)
			off += len(call[k].msgs)
		}
		return
	}
	for k := range call {
		out[k] = perr
		if perr != nil && len(call) > 1 {
			out[k] = fmt.Errorf("%w: %w", errWholeCall, perr)
		}
	}
}

// publishTally counts a bucket's publications: how many intents were accepted, and how many
// publications in a row failed otherwise than by a rejection (a rejection says the publisher is
// up: it is no outage probe).
type publishTally struct{ accepted, failedInARow int }

// outage reports whether the publisher looks down: outageProbes publications in a row failed
// and none was accepted, so the bucket's other intents are not tried in this pass.
func (t *publishTally) outage() bool { return t.failedInARow >= outageProbes && t.accepted == 0 }

// count adds one call's outcome, out for the intents of call, to the tally and to st.
func (t *publishTally) count(out []error, call []settled, st *Stats) {
	for k := range call {
		if out[k] == nil {
			t.accepted++
			t.failedInARow = 0
			st.Published += len(call[k].msgs)
			continue
		}
		if !rejection(out[k]) {
			t.failedInARow++
		}
		st.Failed++
	}
}

// publishOnce calls the publisher with a deadline inside the shard's lease, turns its panic
// into an error, and logs and counts a call slower than WithSlowPublish.
func (r *Relay) publishOnce(ctx context.Context, sh *shard, msgs []Message, st *Stats) (err error) {
	// While other shards publish, this one's lease and those of the shards no worker holds
	// are renewed when due; the time left is taken once the publisher is ours.
	renew := func() error {
		if r.renewIdle != nil {
			r.renewIdle()
		}
		return r.renewIfDue(ctx, sh)
	}
	if err := r.turn.acquire(ctx, r.cfg.lease/6, renew); err != nil {
		return err
	}
	defer r.turn.release()
	if err := r.renewIfDue(ctx, sh); err != nil {
		return err
	}
	left := sh.claim.LeaseUntil.Sub(r.cfg.now()) - r.cfg.lease/10
	if left <= 0 {
		return fmt.Errorf("%w: no time left in the lease to publish", ErrFenced)
	}
	timeout := min(r.cfg.publishTimeout, left)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now() // monotonic: how long the publisher took, whatever the clocks say
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPublisherPanic, p)
		}
		took := time.Since(start)
		if took > r.cfg.slowPublish {
			st.SlowPublishes++
			r.cfg.logger.WarnContext(ctx, "outbox relay: slow publish", "shard", sh.id, "messages", len(msgs),
				"took", took, "threshold", r.cfg.slowPublish, "deadline", timeout, "error", err)
		}
		if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("outbox: publish cut at its deadline of %v (WithPublishTimeout, inside the lease): %w", timeout, err)
		}
	}()
	return r.pub.Publish(pctx, msgs)
}

// afterPublish turns the outcome of each due intent into its mark: published, a failed attempt
// with its backoff, or parked. Only a rejection (see rejection) counts an attempt: an intent is
// parked once it was rejected WithMaxAttempts times, and backs off between them. Any other
// failure (a timeout, the broker unreachable or slow) keeps the intent pending with its
// attempts unchanged, backed off by the relay's run of bucket publications that all failed (WithPublishBackoff's
// doubling, bounded by its maximum), logged at Warn and counted in Stats.Failed and
// Stats.Transient. An intent still pending half the grace after its record's expiry is parked
// whatever its failures (reason stalled), before its row could expire.
func (r *Relay) afterPublish(due []settled, outcome []error, st *Stats) []mark {
	now := r.cfg.now()
	var marks []mark
	for i, v := range due {
		err := outcome[i]
		switch {
		case err == nil:
			marks = append(marks, mark{v: v, state: StatePublished})
			continue
		case errors.Is(err, errNotTried):
			continue
		}
		attempts, own := v.in.attempts, rejection(err)
		delay := r.cfg.backoffAfter(max(int(r.transient.Load()), 1))
		if own {
			attempts++
			st.Attempts++
			delay = r.cfg.backoffAfter(attempts)
		} else {
			st.Transient++
		}
		late := !v.in.expiresAt.IsZero() && now.After(v.in.expiresAt.Add(r.cfg.grace/2))
		switch {
		case own && attempts >= r.cfg.maxAttempts:
			marks = append(marks, mark{v: v, state: StateParked, reason: ReasonPoison, attempts: attempts, err: err})
		case late:
			marks = append(marks, mark{v: v, state: StateParked, reason: ReasonStalled, attempts: attempts, err: err})
		default:
			next := now.Add(delay)
			r.cfg.logger.Warn("outbox relay: publish failed", "namespace", v.in.namespace, "key", v.in.key,
				"rejections", attempts, "counts_toward_parking", own, "next_attempt", next, "error", err)
			marks = append(marks, mark{v: v, attempts: attempts, next: next, err: err})
		}
	}
	return marks
}

func isPublishErrors(err error) bool {
	var per *PublishErrors
	return errors.As(err, &per)
}
