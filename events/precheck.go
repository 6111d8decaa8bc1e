package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/lwt"
)

// PreCheck is the Bloom pre-check of one scope this process owns; *bloom.PreCheck satisfies it.
// It is lwt's interface, so one implementation serves a guard and an executor alike: Check is
// atomic per id (of racing callers at most one is told ClearlyNew), answers ClearlyNew only when
// warm, and records every id it is asked about.
type PreCheck = lwt.PreCheck

// owner is one registered ownership: compared by pointer, so a fast path that began under it
// can tell whether it still holds when the handler returns.
type owner struct {
	pre   PreCheck
	epoch uint64
}

// Own declares that this process alone receives the messages of scope from now on (it was
// assigned the broker partition at epoch, e.g. the consumer group's generation), and turns the
// fast path on for it: pre is warmed from the scope's processed ids, and from then on an id it
// answers ClearlyNew is processed without a lightweight transaction. epoch must be greater than
// any epoch pre has seen. Own returns when pre is warm, or with the warm-up's error (pre is then
// cold and the scope takes the LWT path; call Own again to retry).
//
// Call Disown as soon as the assignment is revoked or in doubt: if two processes own one scope
// at once, a message delivered to both is processed by both.
func (g *Guard) Own(ctx context.Context, scope Scope, epoch uint64, pre PreCheck) error {
	if err := (Message{Scope: scope, ID: "-"}).validate(0); err != nil {
		return err
	}
	if pre == nil {
		return fmt.Errorf("%w: nil pre-check", ErrInvalidOption)
	}
	// Cold at once: an answer from an earlier warm-up of pre must not be acted on now.
	pre.Invalidate()
	o := &owner{pre: pre, epoch: epoch}
	g.mu.Lock()
	if old := g.owned[scope]; old != nil && old.pre != pre {
		old.pre.Invalidate()
	}
	g.owned[scope] = o
	g.mu.Unlock()
	if err := pre.WarmUp(ctx, epoch, g.keySource(scope)); err != nil {
		g.mu.Lock()
		if g.owned[scope] == o {
			delete(g.owned, scope)
		}
		g.mu.Unlock()
		return fmt.Errorf("events: own %s/%s/%d at epoch %d: %w", scope.Group, scope.Topic, scope.Partition, epoch, err)
	}
	return nil
}

// Disown turns the fast path off for scope and makes its pre-check cold: from now on its
// messages take the LWT path. A fast-path handler still running finds the ownership gone when it
// returns and records the message with a conditional write instead.
func (g *Guard) Disown(scope Scope) {
	g.mu.Lock()
	o := g.owned[scope]
	delete(g.owned, scope)
	g.mu.Unlock()
	if o != nil {
		o.pre.Invalidate()
	}
}

// owns reports whether o still owns scope at epoch: the fence a fast path checks before its
// plain write.
func (g *Guard) owns(scope Scope, o *owner, epoch uint64) bool {
	g.mu.Lock()
	cur := g.owned[scope]
	g.mu.Unlock()
	return cur == o && o.pre.Owns(epoch)
}

// keySource adapts the by-scope index to a warm-up. It runs after the pre-check began warming
// (it records every id checked from then on), and first waits for the deliveries of scope that
// were already running here: one that began before could have skipped Check yet write its index
// row after the walk read that hour. Each id's write time is the end of its hour bucket.
func (g *Guard) keySource(scope Scope) bloom.KeySource {
	return bloom.KeySourceFunc(func(ctx context.Context, yield func(string, time.Time) error) error {
		if err := g.flights.Wait(ctx, scope); err != nil {
			return err
		}
		return g.walkScope(ctx, scope, func(id string, hour time.Time) error {
			return yield(id, hour.Add(time.Hour))
		})
	})
}
