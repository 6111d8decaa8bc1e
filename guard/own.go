package guard

import (
	"context"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// Own declares that this process alone receives the messages of scope from now on (it was
// assigned the broker partition at epoch, e.g. the consumer group's generation), and turns
// lwt's fast path on for it: pre (a *bloom.PreCheck) is warmed from the scope's processed ids,
// and from then on an id it answers clearly new is processed without a lightweight transaction.
// epoch must be greater than any epoch pre has seen. Own returns when pre is warm, or with the
// warm-up's error (pre is then cold and the scope takes the LWT path; call Own again to retry).
//
// A guard built WithCompletionColumns refuses Own (ErrInvalidOption): its handlers' cells ride
// on the conditional write that a fast-path run does not make.
//
// Ownership is recorded and fenced on the server (lwt.Store.Own): Own takes the scope at epoch
// and waits until the previous owner's lease cannot admit anything more, at the server's epoch
// too (the previous holder died); lwt.ErrSuperseded while a holder at a greater epoch, or at the
// same epoch for a whole lease, keeps its lease live, lwt.ErrEpochRegressed for an epoch below
// the server's that nobody holds (the group's generations went back: docs/operating.md); an owner whose lease is not live, or that was superseded
// without being told, gets lwt.ErrNoLease (outcome Failed) for the scope's messages, so a zombie
// consumer stops before the partition's new owner starts. Process nothing of the scope before
// Own returns, and on an error call Own again before processing it. Call Disown as soon as the
// assignment is revoked or in doubt: it releases the lease for the next owner.
func (g *Guard) Own(ctx context.Context, scope Scope, epoch uint64, pre lwt.PreCheck) error {
	if err := g.checkCall(ctx); err != nil {
		return err
	}
	if err := (Message{Scope: scope, ID: "-"}).validate(0); err != nil {
		return err
	}
	if pre == nil {
		return fmt.Errorf("%w: nil pre-check", ErrInvalidOption)
	}
	if len(g.cfg.completionCols) > 0 {
		// A fast-path run has no completion: the handler's cells (staged events) would be lost
		// or refused, so every message of this guard takes the LWT path.
		return fmt.Errorf("%w: a guard with completion columns %v has no fast path", ErrInvalidOption, g.cfg.completionCols)
	}
	// The warm-up reads the windows of the horizon back from now, by the cluster's time.
	if err := g.checkClock(ctx); err != nil {
		return fmt.Errorf("guard: own %s/%s/%d: %w", scope.Group, scope.Topic, scope.Partition, err)
	}
	err := g.store.Own(ctx, scope.key(), epoch, pre, g.keySource(scope, pre.Retention()))
	if err != nil {
		return fmt.Errorf("guard: own %s/%s/%d: %w", scope.Group, scope.Topic, scope.Partition, err)
	}
	return nil
}

// Disown turns the fast path off for scope and makes its pre-check cold: from now on its
// messages take the LWT path. A fast-path handler still running finds the ownership gone when it
// returns and records the message with a conditional write instead.
func (g *Guard) Disown(scope Scope) {
	if g == nil {
		return
	}
	g.store.Disown(scope.key())
}

// keySource is the warm-up of a pre-check with the given horizon: the ids written within the
// horizon plus lwt.MaxClockSkew (never more than the retention), from the by-scope index (the
// LWT path of Process, and the fast path of messages without a time; its hour buckets of earlier
// releases and its windows) and from the bucketed table's windows of those times up to now plus
// the skew (the fast path of messages with a time, and ProcessBatch), in every layout the group
// had over them. An id of the index is written by the end of its hour or window; an id of the
// bucketed table is taken as written now, which only keeps it longer.
func (g *Guard) keySource(scope Scope, horizon time.Duration) lwt.KeySource {
	return func(ctx context.Context, yield func(string, time.Time) error) error {
		now := g.cfg.Now()
		from := now.Add(-min(horizon+lwt.MaxClockSkew, g.cfg.retention))
		err := g.walkIndex(ctx, scope, from, func(id string, _, end time.Time) error { return yield(id, end) })
		if err != nil {
			return err
		}
		return g.walkWindows(ctx, g.listWindow, scope, from, now.Add(lwt.MaxClockSkew), func(id string, _, _ time.Time) error {
			return yield(id, time.Time{})
		})
	}
}
