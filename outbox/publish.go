package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// outageProbes is how many publications in a row may fail, with none accepted, before the
// relay takes the publisher for down and leaves the rest of the bucket for a later pass.
const outageProbes = 3

// errNotTried marks the events of a pass that stopped publishing (the publisher looked down,
// or the lease ended): they stay pending, no attempt counted.
var errNotTried = errors.New("outbox: not published in this pass")

// publishAll publishes the committed intents of one bucket in staging order and returns each
// one's error (nil once accepted). Intents never tried go in batches of up to WithPublishBatch
// messages; an intent that failed before goes alone, so a poison event fails only itself. A
// Publisher that reports per message (PublishErrors) gets only the failed intents retried.
func (r *Relay) publishAll(ctx context.Context, sh *shard, due []settled) ([]error, Stats, error) {
	out := make([]error, len(due))
	var st Stats
	var errs []error
	accepted, failedInARow := 0, 0
	for i := 0; i < len(due); {
		j := i + 1
		if due[i].in.attempts == 0 {
			n := len(due[i].msgs)
			for j < len(due) && due[j].in.attempts == 0 && n+len(due[j].msgs) <= r.cfg.publishBatch {
				n += len(due[j].msgs)
				j++
			}
		}
		if err := r.renewIfDue(ctx, sh); err != nil || failedInARow >= outageProbes && accepted == 0 {
			for k := i; k < len(due); k++ {
				out[k] = errNotTried
			}
			return out, st, errors.Join(append(errs, err)...)
		}
		var msgs []Message
		for _, v := range due[i:j] {
			msgs = append(msgs, v.msgs...)
		}
		perr := r.publishOnce(ctx, sh, msgs, &st)
		var per *PublishErrors
		if errors.As(perr, &per) && len(per.Errs) == len(msgs) {
			off := 0
			for k := i; k < j; k++ {
				out[k] = errors.Join(per.Errs[off : off+len(due[k].msgs)]...)
				off += len(due[k].msgs)
			}
		} else {
			for k := i; k < j; k++ {
				out[k] = perr
			}
		}
		for k := i; k < j; k++ {
			if out[k] == nil {
				accepted++
				failedInARow = 0
				st.Published += len(due[k].msgs)
			} else {
				failedInARow++
				st.Failed++
			}
		}
		if perr != nil {
			errs = append(errs, fmt.Errorf("outbox: publish: %w", perr))
		}
		i = j
	}
	if accepted > 0 {
		r.accepted = r.cfg.now()
	}
	return out, st, errors.Join(errs...)
}

// publishOnce calls the publisher with a deadline inside the shard's lease, turns its panic
// into an error, and logs and counts a call slower than WithSlowPublish.
func (r *Relay) publishOnce(ctx context.Context, sh *shard, msgs []Message, st *Stats) (err error) {
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
// with its backoff, or parked. An intent is parked once it failed WithMaxAttempts times while
// its failures were its own (the publisher rejected it for good, or accepted other events
// within the longest backoff), or when it stayed pending past half the grace after its
// record's expiry, before its row could expire.
func (r *Relay) afterPublish(due []settled, outcome []error, st *Stats) []mark {
	now := r.cfg.now()
	healthy := !r.accepted.IsZero() && now.Sub(r.accepted) <= r.cfg.maxBack+r.cfg.publishTimeout
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
		attempts := v.in.attempts + 1
		own := errors.Is(err, ErrRejected) || healthy
		late := !v.in.expiresAt.IsZero() && now.After(v.in.expiresAt.Add(r.cfg.grace/2))
		st.Attempts++
		switch {
		case attempts >= r.cfg.maxAttempts && own:
			marks = append(marks, mark{v: v, state: StateParked, reason: ReasonPoison, attempts: attempts, err: err})
		case late:
			marks = append(marks, mark{v: v, state: StateParked, reason: ReasonStalled, attempts: attempts, err: err})
		default:
			next := now.Add(r.cfg.backoffAfter(attempts))
			r.cfg.logger.Warn("outbox relay: publish failed", "namespace", v.in.namespace, "key", v.in.key,
				"attempt", attempts, "counts_toward_parking", own, "next_attempt", next, "error", err)
			marks = append(marks, mark{v: v, attempts: attempts, next: next, err: err})
		}
	}
	return marks
}
