package events

import (
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/schema"
)

// Option configures a Log or a Guard. WithKeyspace, WithConsistency, WithSerialConsistency,
// WithClock and WithObserver apply to both; every other option to one of them, and the other's
// constructor refuses it with ErrInvalidOption. Options are validated by the constructor.
type Option struct {
	name  string
	for_  target
	apply func(*config)
}

type target uint8

const (
	forLog target = 1 << iota
	forGuard
	forBoth = forLog | forGuard
)

// config holds the settings of a Log and of a Guard; each reads its own.
type config struct {
	keyspace    string
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
	now         func() time.Time
	observer    lwt.Observer

	// The Log's.
	events, buckets, rollups   string // 003's layout, still read, and the rollups
	windowEvents, windows      string // 008's spread layout, written
	lateClaims                 string // where late events are re-homed (late.go)
	width, grace, settle, skew time.Duration
	legacyWidth                time.Duration
	parts                      int

	// The Guard's.
	records, byScope        string // byScope: the hour-bucketed index of earlier releases, read
	layouts, index          string // guard_layouts and the windowed by-scope index, written
	retention, lease        time.Duration
	maxAttempts, maxPayload int
	bucketed                string // ProcessBatch's table
	window                  time.Duration
	batchBuckets            int
	rate                    int // messages per second per broker partition the layout must hold
	legacyWindow            time.Duration
	legacyBuckets           int
	completionCols          []string // of the record table: cells a Process handler's run may set
}

// Defaults of the options.
const (
	DefaultRetention   = 7 * 24 * time.Hour // longer than brokers usually redeliver
	DefaultLease       = lwt.DefaultLease
	DefaultMaxAttempts = 5
	DefaultMaxPayload  = 4 << 20 // larger than common brokers' message size limits
	// DefaultBatchWindow and DefaultBatchBuckets shape a group's partitions of the bucketed
	// table and of the by-scope index: one per broker partition, minute and bucket, holding
	// 75,000 rows at DefaultPartitionRate (see WithBatchWindow).
	DefaultBatchWindow  = time.Minute
	DefaultBatchBuckets = 8
	// MaxBatchBuckets bounds WithBatchBuckets: a warm-up reads every bucket of every window.
	MaxBatchBuckets = 1024
	// DefaultPartitionRate is the rate, in messages per second per broker partition, that a
	// guard's layout must hold under MaxPartitionRows (see WithPartitionRate).
	DefaultPartitionRate = 10_000
	// MaxPartitionRows is the most rows a guard's layout may put in one partition at its
	// declared rate: Cassandra's guidance for a partition.
	MaxPartitionRows = 100_000
	// DefaultWindow, DefaultParts, DefaultGracePeriod and DefaultSettleTime shape a Log: one
	// counter's events of one window are spread over DefaultParts partitions, each holding at
	// most rate x window / parts rows (2,500 at 10k events/s), and a window is folded once
	// window + grace + settle time have passed, so a total lists about four seconds of windows
	// and sums on the node the one filling now (see Log.Total).
	DefaultWindow      = time.Second
	DefaultParts       = 4
	DefaultGracePeriod = 2 * time.Second
	DefaultSettleTime  = time.Second
	// MaxParts bounds WithParts: a total reads every part of the filling window and the marks of
	// every part of the other unfolded windows.
	MaxParts = 256
)

func defaultConfig() config {
	return config{
		keyspace: schema.DefaultKeyspace, consistency: gocql.Quorum, serial: gocql.Serial, now: time.Now,
		events: "counter_events", buckets: "counter_buckets", rollups: "counter_rollups",
		windowEvents: "counter_window_events", windows: "counter_windows", lateClaims: "counter_late_claims",
		width: DefaultWindow, grace: DefaultGracePeriod, settle: DefaultSettleTime, skew: time.Minute,
		legacyWidth: time.Hour, parts: DefaultParts,
		records: "processed_messages", byScope: "processed_messages_by_scope",
		bucketed: "processed_messages_bucketed", window: DefaultBatchWindow, batchBuckets: DefaultBatchBuckets,
		layouts: "guard_layouts", index: "processed_messages_by_window", rate: DefaultPartitionRate,
		legacyWindow: time.Minute, legacyBuckets: 1,
		retention: DefaultRetention, lease: DefaultLease,
		maxAttempts: DefaultMaxAttempts, maxPayload: DefaultMaxPayload,
	}
}

// newConfig applies opts for the constructor of t and validates the result.
func newConfig(t target, opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o.apply == nil {
			return c, fmt.Errorf("%w: zero Option", ErrInvalidOption)
		}
		if o.for_&t == 0 {
			return c, fmt.Errorf("%w: %s does not apply to a %s", ErrInvalidOption, o.name, t)
		}
		o.apply(&c)
	}
	if err := c.validateShared(); err != nil {
		return c, err
	}
	if t == forLog {
		return c, c.validateLog()
	}
	return c, c.validateGuard()
}

func (t target) String() string {
	var names []string
	if t&forLog != 0 {
		names = append(names, "Log")
	}
	if t&forGuard != 0 {
		names = append(names, "Guard")
	}
	return strings.Join(names, " or ")
}

// WithKeyspace names the keyspace of the tables (default "cassdedup"). Log and Guard.
func WithKeyspace(name string) Option {
	return Option{"WithKeyspace", forBoth, func(c *config) { c.keyspace = name }}
}

// WithConsistency sets the consistency of plain writes, reads and Paxos commits (default
// QUORUM; LOCAL_QUORUM with LOCAL_SERIAL in one datacenter). Log and Guard.
func WithConsistency(cl gocql.Consistency) Option {
	return Option{"WithConsistency", forBoth, func(c *config) { c.consistency = cl }}
}

// WithSerialConsistency sets the Paxos consistency of claims and rollup watermarks (default
// SERIAL; LOCAL_SERIAL only when a message, or a counter's rollup, is handled in one
// datacenter). Log and Guard.
func WithSerialConsistency(sc gocql.SerialConsistency) Option {
	return Option{"WithSerialConsistency", forBoth, func(c *config) { c.serial = sc }}
}

// WithClock replaces time.Now, for tests and simulations of history: buckets, leases, expiry.
// Log and Guard.
func WithClock(now func() time.Time) Option {
	return Option{"WithClock", forBoth, func(c *config) { c.now = now }}
}

// WithObserver sets a hook called synchronously on every LWT, write and state transition, the
// same lwt.Observer an lwt.Store takes. It must be fast and safe for concurrent use. Default
// none. Log and Guard.
func WithObserver(o lwt.Observer) Option {
	return Option{"WithObserver", forBoth, func(c *config) { c.observer = o }}
}

// WithCounterTables names the tables of the first layout, which a Log still reads and folds but
// no longer writes (defaults "counter_events", "counter_buckets"), and the rollup table
// (default "counter_rollups"). Log.
func WithCounterTables(events, buckets, rollups string) Option {
	return Option{"WithCounterTables", forLog, func(c *config) { c.events, c.buckets, c.rollups = events, buckets, rollups }}
}

// WithWindowTables names the tables of the spread layout, which a Log writes: the events and the
// window index (defaults "counter_window_events", "counter_windows"). Log.
func WithWindowTables(events, windows string) Option {
	return Option{"WithWindowTables", forLog, func(c *config) { c.windowEvents, c.windows = events, windows }}
}

// WithBucketWidth sets the width of a window (default 1 s; whole milliseconds, 1 s to 1 h,
// dividing 24 h). A window's partitions hold rate x width / parts rows each, and a rollup folds
// a window width + grace + settle after it starts. The width is part of the data: an event's
// window is computed from it, so change it only while no event can be retried across the
// change (a retry would land in another window and count twice). Log.
func WithBucketWidth(d time.Duration) Option {
	return Option{"WithBucketWidth", forLog, func(c *config) { c.width = d }}
}

// WithParts sets how many partitions one window of one counter is spread over (default 4; 1 to
// MaxParts), by a hash of the event id. Pick it from the busiest counter's rate: a partition
// holds rate x width / parts rows, to be kept under ~100,000 (the default holds 400k events/s
// with 1 s windows); more parts also spread a hot counter's writes over more replicas, and cost
// each total one more sum of the filling window and one more mark to check per unfolded window
// (in the same query). Parts may change at any time, also for counters
// with data: each writer records the parts it used for a window in the window index and reads
// follow every recorded value, and a window written with several values is summed by event id,
// so an event retried across the change still counts once. Log.
func WithParts(n int) Option {
	return Option{"WithParts", forLog, func(c *config) { c.parts = n }}
}

// WithLegacyBucketWidth sets the bucket width that the first layout (counter_events) was
// written with, before the spread layout (default 1 h, that layout's default; 1 min to 24 h,
// dividing 24 h). Set it only if that log was made WithBucketWidth. Log.
func WithLegacyBucketWidth(d time.Duration) Option {
	return Option{"WithLegacyBucketWidth", forLog, func(c *config) { c.legacyWidth = d }}
}

// WithGracePeriod sets how long after its window ends an event is still written in its own
// window with one plain write (default 2 s; at least 1 s). A later event, or a later retry, is
// still counted once: it takes the late path (a few reads and one LWT, see the package doc) and
// lands in the window open then. A longer grace moves more of a lagging consumer's events onto
// the one-write path; it costs a total the marks of that many more windows (read in one query
// with the others), and sums only of the windows written meanwhile. Log.
func WithGracePeriod(d time.Duration) Option {
	return Option{"WithGracePeriod", forLog, func(c *config) { c.grace = d }}
}

// WithSettleTime sets how much longer than the grace period a rollup waits before it folds a
// window (default 1 s; at least 1 s). An on-time write not acknowledged within half of it after
// its window closed takes the late path instead, so no acknowledged write lands after the
// window was folded; the other half must exceed the clock skew between writers and rollup
// workers. A node that queues writes for longer than that can still apply a write whose writer
// gave up after the fold: see the package doc. Log.
func WithSettleTime(d time.Duration) Option {
	return Option{"WithSettleTime", forLog, func(c *config) { c.settle = d }}
}

// WithMaxClockSkew sets how far ahead of the clock an event time may be (default 1 min; 0 to
// 1 h). Reads include buckets up to now plus this skew. Log.
func WithMaxClockSkew(d time.Duration) Option {
	return Option{"WithMaxClockSkew", forLog, func(c *config) { c.skew = d }}
}

// WithMessageTables names the record table and the hour-bucketed by-scope index of earlier
// releases, still read until its rows expire (defaults "processed_messages",
// "processed_messages_by_scope"). Guard.
func WithMessageTables(records, byScope string) Option {
	return Option{"WithMessageTables", forGuard, func(c *config) { c.records, c.byScope = records, byScope }}
}

// WithLayoutTables names the table of the groups' layouts and the windowed by-scope index
// (defaults "guard_layouts", "processed_messages_by_window"). Guard.
func WithLayoutTables(layouts, index string) Option {
	return Option{"WithLayoutTables", forGuard, func(c *config) { c.layouts, c.index = layouts, index }}
}

// WithCompletionColumns declares columns of the record table (processed_messages) that a
// handler of Process may set through its run's lwt.Completion: they are written by the same
// conditional update that marks the message processed, or not at all (lwt.Table's
// CompletionColumns). outbox.ColumnName lets handlers stage events with outbox.Stage; the
// column must exist (schema/cql/012_guard_outbox.cql). A guard with completion columns has no
// fast path: its Own fails with ErrInvalidOption, since a fast-path run has no conditional
// write to carry the cells. ProcessBatch's records carry none (outbox.Stage there fails with
// outbox.ErrNoCompletion). Guard.
func WithCompletionColumns(cols ...string) Option {
	return Option{"WithCompletionColumns", forGuard, func(c *config) { c.completionCols = append([]string(nil), cols...) }}
}

// WithBatchTable names ProcessBatch's record table (default "processed_messages_bucketed").
// Guard.
func WithBatchTable(name string) Option {
	return Option{"WithBatchTable", forGuard, func(c *config) { c.bucketed = name }}
}

// WithBatchWindow sets the width of the windows that a consumer group's messages are grouped
// by (default 1 min; whole seconds, 1 s to 24 h): by message time in
// ProcessBatch's table, by indexing time in the by-scope index. WithBatchBuckets sets how many
// buckets each window of a broker partition is split into by a hash of the message id (default
// 8; 1 to MaxBatchBuckets). A Cassandra partition then holds rate x window / buckets messages,
// and a poll costs one conditional batch per window and bucket it touches; NewGuard refuses a
// window and buckets that would hold more than MaxPartitionRows at the declared rate
// (WithPartitionRate).
//
// Both are part of the data: a message is found only in the partition they give it. So they
// are recorded per consumer group, with the message time from which they apply, in
// guard_layouts, and every lookup uses the layout recorded for the message's time. A guard
// configured differently from its group's latest layout records its own from a window boundary
// LayoutSwitchDelay ahead of the clock; earlier times keep the layout they were written with.
// Guard.
func WithBatchWindow(d time.Duration) Option {
	return Option{"WithBatchWindow", forGuard, func(c *config) { c.window = d }}
}

// WithBatchBuckets sets the buckets per window of a group's partitions; see WithBatchWindow.
// Guard.
func WithBatchBuckets(n int) Option {
	return Option{"WithBatchBuckets", forGuard, func(c *config) { c.batchBuckets = n }}
}

// WithPartitionRate declares the most messages per second one broker partition carries (default
// DefaultPartitionRate, 10,000; 1 to 10,000,000). NewGuard refuses, with ErrUnboundedPartition, a
// window and buckets that would put more than MaxPartitionRows in one partition at that rate;
// MinBatchBuckets gives the buckets a rate needs. Guard.
func WithPartitionRate(perSecond int) Option {
	return Option{"WithPartitionRate", forGuard, func(c *config) { c.rate = perSecond }}
}

// WithLegacyBatchLayout sets the window and buckets that an earlier release wrote
// processed_messages_bucketed with (default 1 min and 1 bucket, that release's defaults). A
// consumer group that has no layout recorded yet keeps it for the message times up to a few
// minutes after the guard first sees the group, so the messages processed before the upgrade
// are still found. Set it only if that release was configured WithBatchWindow or
// WithBatchBuckets. Guard.
func WithLegacyBatchLayout(window time.Duration, buckets int) Option {
	return Option{"WithLegacyBatchLayout", forGuard, func(c *config) { c.legacyWindow, c.legacyBuckets = window, buckets }}
}

// MinBatchBuckets returns the fewest buckets that keep a partition of window under
// MaxPartitionRows rows at perSecond messages per broker partition.
func MinBatchBuckets(perSecond int, window time.Duration) int {
	rows := int64(perSecond) * int64(window/time.Second)
	return int((rows + MaxPartitionRows - 1) / MaxPartitionRows)
}

// WithRetention sets how long a processed message is remembered (default 7 days; 1 min to 90
// days). A redelivery after it runs the handler again, so keep it longer than the broker can
// redeliver. Guard.
func WithRetention(d time.Duration) Option {
	return Option{"WithRetention", forGuard, func(c *config) { c.retention = d }}
}

// WithLease sets how long a claim lives without renewal (default 30 s; 1 s up to the retention;
// judged by Cassandra's clock, see lwt.WithLease). It is renewed while the handler runs; a consumer that dies holding it delays
// redelivered copies by at most the lease. Guard.
func WithLease(d time.Duration) Option {
	return Option{"WithLease", forGuard, func(c *config) { c.lease = d }}
}

// WithMaxAttempts sets how many handler runs a message gets (default 5; 1 to 1000). When a run
// fails and it was the last, or a delivery finds the attempts used up (a consumer crashed in
// the handler each time), the message is reported as Poison from then on. Guard.
func WithMaxAttempts(n int) Option {
	return Option{"WithMaxAttempts", forGuard, func(c *config) { c.maxAttempts = n }}
}

// WithMaxPayload sets the largest payload accepted (default 4 MiB; 1 byte to 256 MiB). The
// payload is only hashed, to detect two messages sharing an id. Guard.
func WithMaxPayload(n int) Option {
	return Option{"WithMaxPayload", forGuard, func(c *config) { c.maxPayload = n }}
}

func (c *config) validateShared() error {
	switch {
	case c.now == nil:
		return fmt.Errorf("%w: nil clock", ErrInvalidOption)
	case c.serial != gocql.Serial && c.serial != gocql.LocalSerial:
		return fmt.Errorf("%w: serial consistency %v must be SERIAL or LOCAL_SERIAL", ErrInvalidOption, c.serial)
	}
	return nil
}

func (c *config) validateLog() error {
	switch {
	case c.width < time.Second || c.width > time.Hour || (24*time.Hour)%c.width != 0 || c.width%time.Millisecond != 0:
		return fmt.Errorf("%w: window width %v must be whole milliseconds, 1s..1h and divide 24h", ErrInvalidOption, c.width)
	case c.legacyWidth < time.Minute || c.legacyWidth > 24*time.Hour || (24*time.Hour)%c.legacyWidth != 0:
		return fmt.Errorf("%w: legacy bucket width %v must be 1m..24h and divide 24h", ErrInvalidOption, c.legacyWidth)
	case c.parts < 1 || c.parts > MaxParts:
		return fmt.Errorf("%w: parts %d must be 1..%d", ErrInvalidOption, c.parts, MaxParts)
	case c.grace < time.Second:
		return fmt.Errorf("%w: grace period %v must be at least 1s", ErrInvalidOption, c.grace)
	case c.settle < time.Second:
		return fmt.Errorf("%w: settle time %v must be at least 1s", ErrInvalidOption, c.settle)
	case c.skew < 0 || c.skew > time.Hour:
		return fmt.Errorf("%w: clock skew %v must be 0..1h", ErrInvalidOption, c.skew)
	}
	return nil
}

func (c *config) validateGuard() error {
	switch {
	case c.retention < time.Minute || c.retention > 90*24*time.Hour:
		return fmt.Errorf("%w: retention %v must be 1m..90d", ErrInvalidOption, c.retention)
	case c.lease < time.Second || c.lease > c.retention:
		return fmt.Errorf("%w: lease %v must be 1s..retention", ErrInvalidOption, c.lease)
	case c.maxAttempts < 1 || c.maxAttempts > 1000:
		return fmt.Errorf("%w: max attempts %d must be 1..1000", ErrInvalidOption, c.maxAttempts)
	case c.maxPayload < 1 || c.maxPayload > 256<<20:
		return fmt.Errorf("%w: max payload %d must be 1..256 MiB", ErrInvalidOption, c.maxPayload)
	case !validWindow(c.window):
		return fmt.Errorf("%w: batch window %v must be whole seconds, 1s..24h", ErrInvalidOption, c.window)
	case c.batchBuckets < 1 || c.batchBuckets > MaxBatchBuckets:
		return fmt.Errorf("%w: batch buckets %d must be 1..%d", ErrInvalidOption, c.batchBuckets, MaxBatchBuckets)
	case !validWindow(c.legacyWindow) || c.legacyBuckets < 1 || c.legacyBuckets > MaxBatchBuckets:
		return fmt.Errorf("%w: legacy batch layout %v x %d must be a batch window and 1..%d buckets",
			ErrInvalidOption, c.legacyWindow, c.legacyBuckets, MaxBatchBuckets)
	case c.rate < 1 || c.rate > 10_000_000:
		return fmt.Errorf("%w: partition rate %d must be 1..10000000", ErrInvalidOption, c.rate)
	case c.batchBuckets < MinBatchBuckets(c.rate, c.window):
		return fmt.Errorf("%w: %w: %v windows x %d buckets put %d rows in a partition at %d messages/s; "+
			"the limit is %d: use at least %d buckets or shorter windows", ErrInvalidOption, ErrUnboundedPartition,
			c.window, c.batchBuckets, int64(c.rate)*int64(c.window/time.Second)/int64(c.batchBuckets), c.rate,
			MaxPartitionRows, MinBatchBuckets(c.rate, c.window))
	}
	return nil
}

// validWindow reports whether d can be a guard's window: whole seconds, 1 s to 24 h.
func validWindow(d time.Duration) bool {
	return d >= time.Second && d <= 24*time.Hour && d%time.Second == 0
}

// serialRead returns the serial consistency as a read consistency: a SELECT at SERIAL sees
// every committed Paxos write and completes one in flight.
func (c *config) serialRead() gocql.Consistency { return gocql.Consistency(c.serial) }
