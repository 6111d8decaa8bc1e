package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt/observe"
)

// maxFlushRows bounds the rows of one write. A write holds one partition, so Cassandra applies
// it as one mutation and does not warn about its size; the bound keeps a mutation small when a
// hot partition's queue grows behind a slow write.
const maxFlushRows = 256

// flusher sends a Log's on-time rows to counter_window_events, one write per partition at a
// time: the rows queued for a partition while its last write was in flight go together in its
// next write (one unlogged batch of that partition, a single mutation). Each write also sets
// the Log's mark in the partition's writers cell (its id, the write's number), with a write
// timestamp that only grows, so a total that cached the partition's sum with the marks it read
// beside it sees any later write land as a changed mark (see sums).
type flusher struct {
	id      gocql.UUID // this Log's key in the writers cell
	numbers atomic.Int64
	stamps  atomic.Int64 // the last write timestamp, in microseconds

	mu     sync.Mutex
	queues map[partKey][]*pendingRow // per partition with a write in flight
}

// partKey is one partition of counter_window_events: a part of a window of a counter.
type partKey struct {
	counter string
	window  int64 // the window's start, in milliseconds
	part    int
}

// pendingRow is an on-time row waiting for its partition's next write.
type pendingRow struct {
	e      Event
	queued time.Time
	done   chan struct{} // closed when err is set
	err    error
}

func newFlusher() *flusher {
	return &flusher{id: gocql.MustRandomUUID(), queues: make(map[partKey][]*pendingRow)}
}

// stamp returns a write timestamp later than every one this Log used before: consecutive writes
// of a partition must carry growing timestamps, or a later one could lose its mark to an
// earlier one that lands after it.
func (f *flusher) stamp() int64 {
	for {
		last, now := f.stamps.Load(), time.Now().UnixMicro()
		next := max(now, last+1)
		if f.stamps.CompareAndSwap(last, next) {
			return next
		}
	}
}

// write queues e's row for its partition of window and waits for the write that carries it.
// The first row of a partition with no write in flight starts a goroutine that writes the
// partition's queue until it is empty; a goroutine ends at the latest when the window stops
// taking on-time writes, since every write is bounded by landBy. A caller that stops waiting
// leaves its row queued: it is still written, as a failed Record may have stored its event.
func (l *Log) write(ctx context.Context, e Event, window time.Time) error {
	f := l.flush
	k := partKey{e.Counter, window.UnixMilli(), partOf(e.ID, l.cfg.parts)}
	r := &pendingRow{e: e, queued: time.Now(), done: make(chan struct{})}
	f.mu.Lock()
	q, busy := f.queues[k]
	f.queues[k] = append(q, r)
	f.mu.Unlock()
	if !busy {
		go l.drain(k, window)
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain writes k's queue, up to maxFlushRows rows a write, until it is empty.
func (l *Log) drain(k partKey, window time.Time) {
	f := l.flush
	for {
		f.mu.Lock()
		q := f.queues[k]
		if len(q) == 0 {
			delete(f.queues, k)
			f.mu.Unlock()
			return
		}
		n := min(len(q), maxFlushRows)
		rows := q[:n:n]
		f.queues[k] = q[n:]
		f.mu.Unlock()
		err := l.send(k, window, rows)
		for _, r := range rows {
			l.observeRow(r, err)
			r.err = err
			close(r.done)
		}
	}
}

// send writes rows, all of partition k of window, if the window can still take them: it is
// open when the write is sent, and the write is acknowledged within half the settle time after
// the window closed (landBy). Otherwise it returns errMissedWindow, and the late path decides
// once the window settled whether the rows are there.
func (l *Log) send(k partKey, window time.Time, rows []*pendingRow) error {
	left := l.landBy(k.counter, window).Sub(l.cfg.Now())
	if l.closed(k.counter, window, l.cfg.Now()) || left <= 0 {
		return errMissedWindow
	}
	// left is measured on the Log's clock and waited in real time.
	ctx, cancel := context.WithTimeout(context.Background(), left)
	defer cancel()
	err := l.writeRows(ctx, k, window, rows)
	if err != nil && ctx.Err() != nil {
		return errMissedWindow
	}
	return err
}

// writeRows writes rows, all of partition k of window, and this Log's mark in the partition's
// writers cell, in one unlogged batch of one partition: Cassandra applies it as one mutation,
// so a read that sees the mark sees the rows.
func (l *Log) writeRows(ctx context.Context, k partKey, window time.Time, rows []*pendingRow) error {
	now, ttl := l.cfg.Now().UTC(), l.rowTTL()
	b := l.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx).WithTimestamp(l.flush.stamp())
	b.SetConsistency(l.cfg.Consistency)
	for _, r := range rows {
		b.Query(l.q.insertEvent, r.e.Counter, window, k.part, r.e.ID, r.e.Delta, now, ttl)
	}
	b.Query(l.q.markPart, ttl, l.flush.id, l.flush.numbers.Add(1), k.counter, window, k.part)
	if err := l.session.ExecuteBatch(b); err != nil {
		return err
	}
	l.stats.writes.Add(1)
	l.stats.rows.Add(int64(len(rows)))
	l.touch(k.counter, window)
	l.countRows(k.counter, len(rows), now)
	return nil
}

// observeRow reports one row's write to the Log's observer: a row waits for its partition's
// write, so its latency runs from when it was queued.
func (l *Log) observeRow(r *pendingRow, err error) {
	if l.cfg.Observer == nil {
		return
	}
	l.cfg.Observer.Observe(observe.Observation{Kind: observe.ObservedWrite, Key: observe.Key{r.e.Counter, r.e.ID}, Op: "record",
		Latency: time.Since(r.queued), Err: err})
}

// wrapRecord names the event in an error of its write.
func wrapRecord(e Event, err error) error {
	if err == nil || errors.Is(err, errMissedWindow) {
		return err
	}
	return fmt.Errorf("events: record %q in %q: %w", e.ID, e.Counter, err)
}
