package guard

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/storeopt"
)

// Option configures a Guard; New applies and validates them. A bad option's error names the
// option and its value and wraps ErrInvalidOption.
type Option func(*config) error

type config struct {
	storeopt.Common // keyspace, consistencies, clock, observer: the options events' share

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
	completionCols          []string          // of the record table: cells a Process handler's run may set
	ownership               []lwt.StoreOption // WithOwnership's and WithWriteRequestTimeout's, for the store's Own
	unchecked               bool              // WithoutClockCheck
	logger                  *slog.Logger      // WithLogger; nil: none
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
)

func defaultConfig() config {
	return config{
		Common:  storeopt.Defaults(),
		records: "processed_messages", byScope: "processed_messages_by_scope",
		bucketed: "processed_messages_bucketed", window: DefaultBatchWindow, batchBuckets: DefaultBatchBuckets,
		layouts: "guard_layouts", index: "processed_messages_by_window", rate: DefaultPartitionRate,
		legacyWindow: time.Minute, legacyBuckets: 1,
		retention: DefaultRetention, lease: DefaultLease,
		maxAttempts: DefaultMaxAttempts, maxPayload: DefaultMaxPayload,
	}
}

// newConfig refuses a missing session (noSession), then applies opts to the defaults and checks
// what no single option can: the lease within the retention, and the layout's partitions
// bounded at the declared rate.
func newConfig(noSession bool, opts []Option) (config, error) {
	c := defaultConfig()
	if err := optcheck.Build(ErrInvalidOption, noSession, "session", &c, opts); err != nil {
		return c, err
	}
	switch {
	case c.lease > c.retention:
		return c, fmt.Errorf("%w: lease %v exceeds retention %v", ErrInvalidOption, c.lease, c.retention)
	case c.batchBuckets < MinBatchBuckets(c.rate, c.window):
		return c, fmt.Errorf("%w: %w: %v windows x %d buckets put %d rows in a partition at %d messages/s; "+
			"the limit is %d: use at least %d buckets or shorter windows", ErrInvalidOption, ErrUnboundedPartition,
			c.window, c.batchBuckets, int64(c.rate)*int64(c.window/time.Second)/int64(c.batchBuckets), c.rate,
			MaxPartitionRows, MinBatchBuckets(c.rate, c.window))
	}
	return c, nil
}

// WithKeyspace names the keyspace of the tables (default "cassdedup").
func WithKeyspace(name string) Option { return storeopt.Keyspace[*config](name) }

// WithConsistency sets the consistency of plain writes, reads and Paxos commits (default
// QUORUM; LOCAL_QUORUM with LOCAL_SERIAL in one datacenter).
func WithConsistency(cl gocql.Consistency) Option { return storeopt.Consistency[*config](cl) }

// WithSerialConsistency sets the Paxos consistency of claims and serial reads (default
// SERIAL; LOCAL_SERIAL only when each message is handled in one datacenter).
func WithSerialConsistency(sc gocql.SerialConsistency) Option {
	return storeopt.SerialConsistency[*config](ErrInvalidOption, sc)
}

// WithClock replaces time.Now, for tests and simulations of history: windows, leases, expiry.
// Time is judged by the cluster's clock, which a guard knows as this clock plus its offset from
// a coordinator's, measured at its first call and each minute after (see WithoutClockCheck, for
// a clock that simulates history).
func WithClock(now func() time.Time) Option { return storeopt.Clock[*config](ErrInvalidOption, now) }

// WithObserver sets a hook called synchronously on every LWT, write and state transition, the
// same lwt.Observer an lwt.Store takes. It must be fast and safe for concurrent use. Default
// none (nil); a typed nil (a nil pointer in the interface) is refused, as its calls would panic.
func WithObserver(o lwt.Observer) Option { return storeopt.Observer[*config](ErrInvalidOption, o) }

// WithMessageTables names the record table and the hour-bucketed by-scope index of earlier
// releases, still read until its rows expire (defaults "processed_messages",
// "processed_messages_by_scope").
func WithMessageTables(records, byScope string) Option {
	return func(c *config) error {
		c.records, c.byScope = records, byScope
		return nil
	}
}

// WithLayoutTables names the table of the groups' layouts and the windowed by-scope index
// (defaults "guard_layouts", "processed_messages_by_window").
func WithLayoutTables(layouts, index string) Option {
	return func(c *config) error {
		c.layouts, c.index = layouts, index
		return nil
	}
}

// WithCompletionColumns declares columns of the record table (processed_messages) that a
// handler of Process may set through its run's lwt.Completion: they are written by the same
// conditional update that marks the message processed, or not at all (lwt.Table's
// CompletionColumns). outbox.ColumnName lets handlers stage events with outbox.Stage; the
// column must exist (schema/cql/012_guard_outbox.cql). A guard with completion columns has no
// fast path: its Own fails with ErrInvalidOption, since a fast-path run has no conditional
// write to carry the cells. ProcessBatch's records carry none (outbox.Stage there fails with
// outbox.ErrNoCompletion).
func WithCompletionColumns(cols ...string) Option {
	return func(c *config) error {
		c.completionCols = append([]string(nil), cols...)
		return nil
	}
}

// WithBatchTable names ProcessBatch's record table (default "processed_messages_bucketed").
func WithBatchTable(name string) Option {
	return func(c *config) error {
		c.bucketed = name
		return nil
	}
}

// WithBatchWindow sets the width of the windows that a consumer group's messages are grouped
// by (default 1 min; whole seconds, 1 s to 24 h): by message time in
// ProcessBatch's table, by indexing time in the by-scope index. WithBatchBuckets sets how many
// buckets each window of a broker partition is split into by a hash of the message id (default
// 8; 1 to MaxBatchBuckets). A Cassandra partition then holds rate x window / buckets messages,
// and a poll costs one conditional batch per window and bucket it touches; New refuses a
// window and buckets that would hold more than MaxPartitionRows at the declared rate
// (WithPartitionRate).
//
// Both are part of the data: a message is found only in the partition they give it. So they
// are recorded per consumer group, with the message time from which they apply, in
// guard_layouts, and every lookup uses the layout recorded for the message's time. A guard
// configured differently from its group's latest layout records its own from a window boundary
// LayoutSwitchDelay ahead of the clock; earlier times keep the layout they were written with.
func WithBatchWindow(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, !validWindow(d), optcheck.Call("WithBatchWindow", d), "must be whole seconds, 1s..24h",
		func(c *config) { c.window = d })
}

// WithBatchBuckets sets the buckets per window of a group's partitions; see WithBatchWindow.
func WithBatchBuckets(n int) Option {
	return optcheck.Set(ErrInvalidOption, n < 1 || n > MaxBatchBuckets, optcheck.Call("WithBatchBuckets", n), fmt.Sprintf("must be 1..%d", MaxBatchBuckets),
		func(c *config) { c.batchBuckets = n })
}

// WithPartitionRate declares the most messages per second one broker partition carries (default
// DefaultPartitionRate, 10,000; 1 to 10,000,000). New refuses, with ErrUnboundedPartition, a
// window and buckets that would put more than MaxPartitionRows in one partition at that rate;
// MinBatchBuckets gives the buckets a rate needs.
func WithPartitionRate(perSecond int) Option {
	return optcheck.Set(ErrInvalidOption, perSecond < 1 || perSecond > 10_000_000, optcheck.Call("WithPartitionRate", perSecond), "must be 1..10000000",
		func(c *config) { c.rate = perSecond })
}

// WithLegacyBatchLayout sets the window and buckets that an earlier release wrote
// processed_messages_bucketed with (default 1 min and 1 bucket, that release's defaults). A
// consumer group that has no layout recorded yet keeps it for the message times up to a few
// minutes after the guard first sees the group, so the messages processed before the upgrade
// are still found. Set it only if that release was configured WithBatchWindow or
// WithBatchBuckets.
func WithLegacyBatchLayout(window time.Duration, buckets int) Option {
	return optcheck.Set(ErrInvalidOption, !validWindow(window) || buckets < 1 || buckets > MaxBatchBuckets,
		optcheck.Call("WithLegacyBatchLayout", window, buckets), fmt.Sprintf("must be a batch window and 1..%d buckets", MaxBatchBuckets),
		func(c *config) { c.legacyWindow, c.legacyBuckets = window, buckets })
}

// WithRetention sets how long a processed message is remembered (default 7 days; 1 min to 90
// days). A redelivery after it runs the handler again, so keep it longer than the broker can
// redeliver.
func WithRetention(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Minute || d > 90*24*time.Hour, optcheck.Call("WithRetention", d), "must be 1m..90d",
		func(c *config) { c.retention = d })
}

// WithLease sets how long a claim lives without renewal (default 30 s; 1 s up to the retention;
// judged by Cassandra's clock, see lwt.WithLease). It is renewed while the handler runs; a consumer that dies holding it delays
// redelivered copies by at most the lease.
func WithLease(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Second, optcheck.Call("WithLease", d), "must be at least 1s (and at most the retention)",
		func(c *config) { c.lease = d })
}

// WithOwnership sets the server lease by which Own holds a scope and the margin by which the
// owner's fast path stops before that lease could expire (default 10 s and 3 s; the margin at
// least 1.5 s, the lease whole seconds, at least twice the margin and at most a week,
// lwt.MaxOwnerLease; see lwt.WithOwnership and docs/fastpath.md).
func WithOwnership(lease, margin time.Duration) Option {
	p := lwt.OwnershipProblem(lease, margin)
	return optcheck.Set(ErrInvalidOption, p != "", optcheck.Call("WithOwnership", lease, margin), p,
		func(c *config) { c.ownership = append(c.ownership, lwt.WithOwnership(lease, margin)) })
}

// WithWriteRequestTimeout tells the ownership the cluster's write_request_timeout (default 2 s,
// Cassandra's default; more than 0 and at most 1 min): Own waits it out after taking a scope's
// lease, before its warm-up reads, so that a record write the previous owner sent before its
// deadline is applied or dropped first. Set it to the cluster's value where that was raised;
// see lwt.WithWriteRequestTimeout and docs/fastpath.md.
func WithWriteRequestTimeout(d time.Duration) Option {
	p := lwt.WriteRequestTimeoutProblem(d)
	return optcheck.Set(ErrInvalidOption, p != "", optcheck.Call("WithWriteRequestTimeout", d), p,
		func(c *config) { c.ownership = append(c.ownership, lwt.WithWriteRequestTimeout(d)) })
}

// WithMaxAttempts sets how many handler runs a message gets (default 5; 1 to 1000). When a run
// fails and it was the last, or a delivery finds the attempts used up (a consumer crashed in
// the handler each time), the message is reported as Poison from then on.
func WithMaxAttempts(n int) Option {
	return optcheck.Set(ErrInvalidOption, n < 1 || n > 1000, optcheck.Call("WithMaxAttempts", n), "must be 1..1000",
		func(c *config) { c.maxAttempts = n })
}

// WithMaxPayload sets the largest payload accepted (default 4 MiB; 1 byte to 256 MiB). The
// payload is only hashed, to detect two messages sharing an id.
func WithMaxPayload(n int) Option {
	return optcheck.Set(ErrInvalidOption, n < 1 || n > 256<<20, optcheck.Call("WithMaxPayload", n), "must be 1 byte..256 MiB",
		func(c *config) { c.maxPayload = n })
}

// MinBatchBuckets returns the fewest buckets that keep a partition of window under
// MaxPartitionRows rows at perSecond messages per broker partition.
func MinBatchBuckets(perSecond int, window time.Duration) int {
	rows := int64(perSecond) * int64(window/time.Second)
	return int((rows + MaxPartitionRows - 1) / MaxPartitionRows)
}

// validWindow reports whether d can be a guard's window: whole seconds, 1 s to 24 h.
func validWindow(d time.Duration) bool {
	return d >= time.Second && d <= 24*time.Hour && d%time.Second == 0
}
