package lwt

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gocql/gocql"
)

// PutCompletedBatch records items, keys of one partition whose operations ran on the fast path,
// as COMPLETED with results (nil: empty results; otherwise one per item), by one unlogged
// batch of plain writes: Cassandra applies a batch on one partition as one mutation, so the
// records appear together or not at all, at the cost of one write and no Paxos round. Each
// record has the columns and single expiry of one BeginBatch and FinishBatch would leave, with
// fence 0 (no claim was made), attempts 1 and the ownership epoch. The rules of
// Store.PutCompleted apply: exact only while no LWT has touched the rows, which the caller's
// ownership of the partition's scope guarantees. The write is idempotent and may be retried.
// Errors: ErrInvalidKey, ErrInvalidArgument, ErrResultTooLarge, ctx.Err(), or a driver error.
func (s *BatchStore) PutCompletedBatch(ctx context.Context, partition Key, items []BatchItem, results [][]byte, epoch uint64) error {
	if err := s.validate(partition, items); err != nil {
		return err
	}
	if results != nil && len(results) != len(items) {
		return fmt.Errorf("%w: %d results for %d items", ErrInvalidArgument, len(results), len(items))
	}
	if epoch > math.MaxInt64 {
		return fmt.Errorf("%w: epoch %d does not fit a bigint", ErrInvalidArgument, epoch)
	}
	now := s.base.now()
	expires := now.Add(s.base.cfg.retention)
	ttl := ttlSeconds(expires, now)
	b := s.base.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	var one []any // the only statement's values, when there is one: sent as a plain query
	for i, it := range items {
		fp, res := it.Fingerprint, []byte{} // empty blobs, not null cells (tombstones)
		if fp == nil {
			fp = []byte{}
		}
		if results != nil && results[i] != nil {
			res = results[i]
		}
		if len(res) > s.base.cfg.maxResult {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(res), s.base.cfg.maxResult)
		}
		owner, err := gocql.RandomUUID()
		if err != nil {
			return err
		}
		one = append(append([]any{}, s.key(partition, it.Key)...), fp, owner, res, now, now, expires, int64(epoch), ttl)
		b.Query(s.stmt.put, one...)
	}
	b.SetConsistency(s.base.cfg.commit)
	start := time.Now()
	var err error
	if len(items) == 1 {
		// The fast path of Process records one message: a plain write costs the client and the
		// node less than a batch of one.
		err = s.base.session.Query(s.stmt.put, one...).WithContext(ctx).Consistency(s.base.cfg.commit).Idempotent(true).Exec()
	} else {
		err = s.base.session.ExecuteBatch(b)
	}
	s.base.record(Observation{Kind: ObservedWrite, Key: partition, Op: "put", Latency: time.Since(start), Err: err})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("lwt: put completed batch: %w", err)
	}
	return nil
}

// Get reads the record of key in partition at the commit consistency, which sees every
// acknowledged plain write and every committed Paxos round. Errors: ErrNotFound, ErrInvalidKey,
// ctx.Err() or a driver error.
func (s *BatchStore) Get(ctx context.Context, partition Key, key string) (*Record, error) {
	if err := s.validate(partition, []BatchItem{{Key: key}}); err != nil {
		return nil, err
	}
	rows, err := s.readKeys(partition, []string{key}).WithContext(ctx).Consistency(s.base.cfg.commit).Iter().SliceMap()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("lwt: get %v/%q: %w", partition, key, err)
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return recordFromRow(rows[0]), nil
}
