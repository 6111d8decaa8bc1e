package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/schema"
)

// Log is an event log of counters: each increment is an event row, and a counter's total is
// its rollup plus the events of the buckets the rollup has not folded yet.
// A Log is safe for concurrent use.
type Log struct {
	session *gocql.Session
	cfg     config
	q       logQueries

	mu      sync.Mutex
	indexed map[bucketKey]struct{} // buckets whose index row is known to be stored
}

type bucketKey struct {
	counter string
	bucket  int64
}

// indexedCacheSize bounds the in-process set of indexed buckets; it is only a shortcut that
// saves a write per event, so forgetting it costs a write, never correctness.
const indexedCacheSize = 4096

type logQueries struct {
	insertEvent, insertBucket, listBuckets, listAllBuckets, sumBucket string
	readRollup, insertRollup, updateRollup                            string
}

// NewLog returns a Log over session. The tables must exist (schema.Apply creates them).
func NewLog(session *gocql.Session, opts ...Option) (*Log, error) {
	if session == nil {
		return nil, fmt.Errorf("%w: nil session", ErrInvalidOption)
	}
	cfg, err := newConfig(forLog, opts)
	if err != nil {
		return nil, err
	}
	var names [3]string
	for i, t := range []string{cfg.events, cfg.buckets, cfg.rollups} {
		n, err := schema.QualifiedName(cfg.keyspace, t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		names[i] = n
	}
	ev, bk, ru := names[0], names[1], names[2]
	return &Log{
		session: session,
		cfg:     cfg,
		indexed: make(map[bucketKey]struct{}),
		q: logQueries{
			insertEvent:    "INSERT INTO " + ev + " (counter, bucket, event_id, delta, recorded_at) VALUES (?, ?, ?, ?, ?)",
			insertBucket:   "INSERT INTO " + bk + " (counter, bucket) VALUES (?, ?)",
			listBuckets:    "SELECT bucket FROM " + bk + " WHERE counter = ? AND bucket >= ? AND bucket < ?",
			listAllBuckets: "SELECT bucket FROM " + bk + " WHERE counter = ? AND bucket < ?",
			sumBucket:      "SELECT sum(delta) FROM " + ev + " WHERE counter = ? AND bucket = ?",
			readRollup:     "SELECT watermark, total FROM " + ru + " WHERE counter = ?",
			insertRollup:   "INSERT INTO " + ru + " (counter, watermark, total, updated_at) VALUES (?, ?, ?, ?) IF NOT EXISTS",
			updateRollup:   "UPDATE " + ru + " SET watermark = ?, total = ?, updated_at = ? WHERE counter = ? IF watermark = ?",
		},
	}, nil
}

// bucketOf returns the start of the bucket holding t. Truncate counts from the zero time, so
// every process computes the same bucket for the same instant.
func (l *Log) bucketOf(t time.Time) time.Time { return t.UTC().Truncate(l.cfg.width) }

// horizon returns the start of the oldest bucket that is not closed at now: every bucket
// before it ended at least grace plus settle time ago and may be folded.
func (l *Log) horizon(now time.Time) time.Time {
	return l.bucketOf(now.Add(-l.cfg.grace - l.cfg.settle))
}

// readEnd returns the exclusive end of the buckets a read must include at now.
func (l *Log) readEnd(now time.Time) time.Time {
	return l.bucketOf(now.Add(l.cfg.skew)).Add(l.cfg.width)
}

// checkCall refuses a call on a nil *Log or with a nil context (lwt.ErrInvalidArgument).
func (l *Log) checkCall(ctx context.Context) error {
	return argcheck.Call(lwt.ErrInvalidArgument, "*events.Log", l == nil, ctx)
}
