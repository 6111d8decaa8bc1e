package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
)

// fastRecorded is the result the LWT path stores (its text, stored in records, keeps the
// package's former name) for a message it found recorded in the bucketed
// table (by a fast path or by ProcessBatch): the message was processed before, so the delivery
// is a duplicate, and later ones replay this record.
var fastRecorded = []byte("events: recorded in the bucketed table")

// placeFast is the store's lwt.Recorder: a message of an owned scope that its pre-check knows
// to be new, with a time of its own, is recorded as COMPLETED in its partition of the bucketed
// table, by one plain write. That partition is one a later owner's warm-up reads (the windows of
// the horizon), so the record is its own index and nothing else is written before the answer.
// The partition is resolved here, before the handler and the ownership check, since its layout
// may need reading (every few minutes, or a first time): after the check comes only the write.
func (g *Guard) placeFast(ctx context.Context, key lwt.Key, at time.Time) (lwt.RecordWrite, error) {
	m, ok := messageOf(key)
	if !ok {
		return nil, fmt.Errorf("%w: key %v is not a message's", ErrInvalidMessage, key)
	}
	m.Time = at
	p, err := g.partitionOf(ctx, m)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, fingerprint, result []byte, epoch uint64) error {
		return g.batch.PutCompletedBatch(ctx, p, []lwt.BatchItem{{Key: m.ID, Fingerprint: fingerprint}},
			[][]byte{result}, epoch)
	}, nil
}

// messageOf is the inverse of Message.key.
func messageOf(key lwt.Key) (Message, bool) {
	if len(key) != 4 {
		return Message{}, false
	}
	group, ok1 := key[0].(string)
	topic, ok2 := key[1].(string)
	partition, ok3 := key[2].(int32)
	id, ok4 := key[3].(string)
	return Message{Scope: Scope{Group: group, Topic: topic, Partition: partition}, ID: id}, ok1 && ok2 && ok3 && ok4
}

// inBucketed is what the LWT path of Process does, for a message with a time, before its
// handler runs: it reads the message's row of the bucketed table, where the fast path and
// ProcessBatch record messages. A final record there means the message was processed: the
// claim is completed with fastRecorded (a COMPLETED row) or failed with its error (a FAILED
// one), and the handler does not run. It runs after the claim, so after this process's own
// fast path of the id (if any) has written its record and left the calls running here.
func (g *Guard) inBucketed(ctx context.Context, m Message) (done bool, err error) {
	p, err := g.partitionOf(ctx, m)
	if err != nil {
		return false, err
	}
	rec, err := g.batch.Get(ctx, p, m.ID)
	switch {
	case errors.Is(err, lwt.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("guard: read %q in the bucketed table: %w", m.ID, err)
	case rec.Status == lwt.StatusCompleted:
		return true, nil
	case rec.Status == lwt.StatusFailed:
		return true, lwt.Permanent(errors.New(string(rec.Result)))
	}
	// A claim of ProcessBatch still running, or released: its own path settles it.
	return false, nil
}
