package events

import (
	"context"
	"sync"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/argcheck"
	"github.com/cassdedup/cassdedup/internal/flights"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/lwt/observe"
)

// Log is an event log of counters: each increment is an event row, and a counter's total is
// its rollup plus the events of the windows the rollup has not folded yet.
// A Log is safe for concurrent use.
type Log struct {
	session *gocql.Session
	cfg     config
	q       logQueries
	late    lateState
	flush   *flusher
	sums    *sumCache
	widths  *widthState
	stats   logCounters
	clock   *clock.Meter // nil under WithoutClockCheck

	mu      sync.Mutex
	indexed map[windowKey]struct{} // windows whose index row (with cfg.parts) is known stored
	started map[string]struct{}    // counters whose rollup row is known to have a since
	active  map[string]time.Time   // counters recorded by this Log: the last window written
	floors  map[string]time.Time   // the latest watermark seen per counter (see tail)
	behind  map[string]time.Time   // per counter rolled or written: the oldest time maybe unfolded
	totals  map[string]*totalRead  // counters with a read in flight: the next read, nil if none yet

	indexing flights.Set[windowKey, struct{}] // index writes in flight
	starting flights.Set[string, struct{}]    // since writes in flight
}

type windowKey struct {
	counter string
	window  int64
}

// Bounds of the in-process sets. indexed and started are shortcuts that save a write per event
// or per counter, so forgetting them costs a write, never correctness. active feeds RunRollups.
const (
	indexedCacheSize = 1 << 14
	startedCacheSize = 1 << 16
	activeMax        = 1 << 17
)

type logQueries struct {
	// The spread layout.
	insertEvent, markPart, insertWindow, listWindows, sumPart, readMarks, readPart string
	setSince, readWidths, addWidth                                                 string
	// The first layout: read and folded, never written.
	listLegacy, sumLegacy string
	// The rollup row.
	readRollup, insertRollup, updateRollup, startRollup string
}

// NewLog returns a Log over session. The tables must exist (schema.Apply creates them).
func NewLog(session *gocql.Session, opts ...Option) (*Log, error) {
	cfg, err := newConfig(session == nil, opts)
	if err != nil {
		return nil, err
	}
	t, err := cfg.qualified()
	if err != nil {
		return nil, err
	}
	meter, err := cfg.measureClock(session)
	if err != nil {
		return nil, err
	}
	ev, bk, ru, we, wi := t.events, t.buckets, t.rollups, t.windowEvents, t.windows
	return &Log{
		session: session,
		cfg:     cfg,
		clock:   meter,
		late:    newLateState(t),
		flush:   newFlusher(),
		sums:    newSumCache(),
		widths:  newWidthState(),
		indexed: make(map[windowKey]struct{}),
		started: make(map[string]struct{}),
		active:  make(map[string]time.Time),
		floors:  make(map[string]time.Time),
		behind:  make(map[string]time.Time),
		totals:  make(map[string]*totalRead),
		q: logQueries{
			insertEvent:  "INSERT INTO " + we + " (counter, bucket, part, event_id, delta, recorded_at) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?",
			insertWindow: "INSERT INTO " + wi + " (counter, day, bucket, parts) VALUES (?, ?, ?, ?) USING TTL ?",
			listWindows:  "SELECT bucket, parts FROM " + wi + " WHERE counter = ? AND day = ? AND bucket >= ? AND bucket < ?",
			markPart:     "UPDATE " + we + " USING TTL ? SET writers[?] = ? WHERE counter = ? AND bucket = ? AND part = ?",
			sumPart:      "SELECT sum(CAST(delta AS varint)), writers FROM " + we + " WHERE counter = ? AND bucket = ? AND part = ?",
			readMarks:    "SELECT writers FROM " + we + " WHERE counter = ? AND bucket = ? AND part = ? LIMIT 1",
			readPart:     "SELECT event_id, delta FROM " + we + " WHERE counter = ? AND bucket = ? AND part = ?",
			setSince:     "UPDATE " + ru + " SET since = ?, widths = ? WHERE counter = ? IF since = null",
			readWidths:   "SELECT widths, since FROM " + ru + " WHERE counter = ?",
			addWidth:     "UPDATE " + ru + " SET widths = widths + ? WHERE counter = ? IF EXISTS",
			listLegacy:   "SELECT bucket FROM " + bk + " WHERE counter = ? AND bucket > ? AND bucket < ?",
			sumLegacy:    "SELECT sum(CAST(delta AS varint)) FROM " + ev + " WHERE counter = ? AND bucket = ?",
			readRollup:   "SELECT watermark, total, since, widths FROM " + ru + " WHERE counter = ?",
			insertRollup: "INSERT INTO " + ru + " (counter, watermark, total, updated_at) VALUES (?, ?, ?, ?) IF NOT EXISTS",
			updateRollup: "UPDATE " + ru + " SET watermark = ?, total = ?, updated_at = ? WHERE counter = ? IF watermark = ?",
			startRollup:  "UPDATE " + ru + " SET watermark = ?, total = ?, updated_at = ? WHERE counter = ? IF watermark = null",
		},
	}, nil
}

// dayOf returns the UTC day holding t: the partition of the window index. A window never
// straddles two days, since every width divides 24 h.
func dayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// horizon returns the start of counter's oldest window that is not closed at now: every window
// before it ended at least grace plus settle time ago and may be folded. The widths must be
// those of a rollup row read before now (see learnWidths).
func (l *Log) horizon(counter string, now time.Time) time.Time {
	return l.windowOf(counter, now.Add(-l.cfg.grace-l.cfg.settle))
}

// readEnd returns the exclusive end of the window starts a read must include at now: every
// window that may have started, event times reaching the clock skew ahead.
func (l *Log) readEnd(now time.Time) time.Time {
	return now.Add(l.cfg.skew).Truncate(time.Millisecond).Add(time.Millisecond)
}

// Lag returns how far behind the clock a rollup's watermark can be, with rollups run every
// interval: a window is folded once its end plus the grace period and the settle time have
// passed, at the next rollup after that; the widest window is the cold width (WithWindowWidths). A total lists that many seconds of windows; it sums
// on the node only those its Log has not summed since they last changed (see Total). A nil Log
// returns 0.
func (l *Log) Lag(interval time.Duration) time.Duration {
	if l == nil {
		return 0
	}
	return l.cfg.coldWidth + l.cfg.grace + l.cfg.settle + interval
}

// checkCall refuses a call on a nil *Log or with a nil context (lwt.ErrInvalidArgument).
func (l *Log) checkCall(ctx context.Context) error {
	return argcheck.Call(observe.ErrInvalidArgument, "*events.Log", l == nil, ctx)
}
