package events

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/lwt"
)

// fastCommitTimeout bounds the writes that record a message after its handler succeeded. They
// run even if the caller's ctx has ended: the work is done and must not be repeated.
const fastCommitTimeout = lwt.DefaultCommitTimeout

// fast is the fast path: the pre-check, warm for the scope this guard owns, never saw m.ID, so
// no record exists and no other delivery of it can reach the table before this one returns
// (other processes do not receive the scope; this one's flights set holds its redeliveries).
// The handler runs without a claim and m is recorded with plain writes.
//
// Why a plain write is safe here: a plain write beside LWTs on one row can be lost, because LWT
// cells carry Paxos ballot timestamps that can be later than the plain write's. Under ownership
// no LWT has been applied to this row (it does not exist) and none can be until this write is
// acknowledged: the next delivery of m.ID waits for it here, and then finds the record through
// its own LWT (a rejected IF NOT EXISTS), which only reads it. When ownership is violated, a
// second process may claim the same row with an LWT while this one runs: both handlers run (the
// duplicate the fast-path tests measure), and the two writes merge cell by cell, so the LWT
// writer's Complete may find a foreign owner and report its lease lost. The epoch column says
// which owner wrote the plain record.
func (g *Guard) fast(ctx context.Context, m Message, handler Handler, o *owner, a bloom.Answer) (Outcome, error) {
	g.stats.fastPath.Add(1)
	if err := handler(ctx, m); err != nil {
		// Nothing is written: the filter remembers the id, so a redelivery takes the LWT path,
		// finds no record, counts a false positive and runs the handler as usual.
		g.stats.fastFailed.Add(1)
		return Failed, &handlerError{err}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fastCommitTimeout)
	defer cancel()
	var fp []byte
	if m.Payload != nil {
		sum := sha256.Sum256(m.Payload) // as lwt.WithRequest does, so the LWT path compares it
		fp = sum[:]
	}
	key := lwt.Key{m.Group, m.Topic, m.Partition, m.ID}
	index := make(chan error, 1)
	go func() { index <- g.index(wctx, m) }()
	var err error
	if g.owns(m.Scope, o, a.Epoch) {
		_, err = g.store.PutCompleted(wctx, key, fp, nil, a.Epoch)
	} else {
		// Ownership moved while the handler ran: another owner may have claimed the message.
		g.stats.staleEpoch.Add(1)
		var applied bool
		applied, _, err = g.store.PutCompletedIfNotExists(wctx, key, fp, nil, a.Epoch)
		if err == nil && !applied {
			g.stats.staleConflicts.Add(1) // the new owner has it too: the handler ran twice
		}
	}
	if ierr := <-index; err == nil {
		err = ierr
	}
	if err != nil {
		// The handler's effect is done but not recorded: a redelivery will run it again.
		return Failed, fmt.Errorf("events: record %q after the fast path: %w", m.ID, err)
	}
	return Processed, nil
}

// index writes m's row in the by-scope index, in the bucket of the current hour.
func (g *Guard) index(ctx context.Context, m Message) error {
	now := g.cfg.now().UTC()
	err := g.session.Query(g.insertScope, m.Group, m.Topic, m.Partition, now.Truncate(time.Hour), m.ID,
		int(g.cfg.retention/time.Second)).WithContext(ctx).Consistency(g.cfg.consistency).Idempotent(true).Exec()
	if err != nil {
		return fmt.Errorf("events: index %q by scope: %w", m.ID, err)
	}
	return nil
}
