package events

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt/observe"
	"github.com/cassdedup/cassdedup/lwt/storeopt"
	"github.com/cassdedup/cassdedup/schema"
)

// Option configures a Log; NewLog applies and validates them. A bad option's error names the
// option and its value and wraps ErrInvalidOption.
type Option func(*config) error

type config struct {
	storeopt.Common // keyspace, consistencies, clock, observer: the options guard's share

	events, buckets, rollups   string // 003's layout, still read, and the rollups
	windowEvents, windows      string // 008's spread layout, written
	lateClaims                 string // where earlier releases re-homed late events (late.go)
	lateSlices                 string // where late events are re-homed, in batches (late_batch.go)
	width, grace, settle, skew time.Duration
	hotWidth, coldWidth        time.Duration // 0 until fitWidths: the defaults, within reach of width
	legacyWidth                time.Duration
	parts                      int
	rollupConcurrency          int
	logRetention, maxLag       time.Duration // see WithLogRetention; maxLag 0: a quarter of it
	logger                     *slog.Logger
	unchecked                  bool // WithoutClockCheck
}

// Defaults of the options.
const (
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
	// DefaultRollupConcurrency is how many counters a pass of RunRollups or RollupEvery folds at
	// once (WithRollupConcurrency), and MaxRollupConcurrency its bound.
	DefaultRollupConcurrency = 16
	MaxRollupConcurrency     = 256
)

func defaultConfig() config {
	return config{
		Common: storeopt.Defaults(),
		events: "counter_events", buckets: "counter_buckets", rollups: "counter_rollups",
		windowEvents: "counter_window_events", windows: "counter_windows", lateClaims: "counter_late_claims", lateSlices: "counter_late_slices",
		width: DefaultWindow, grace: DefaultGracePeriod, settle: DefaultSettleTime, skew: time.Minute,
		legacyWidth: time.Hour, parts: DefaultParts, rollupConcurrency: DefaultRollupConcurrency, logRetention: DefaultLogRetention,
	}
}

// newConfig refuses a missing session (noSession), then applies opts to the defaults. Each
// option checks its own value; only the retention and the rollup lag are checked against the
// others once all are applied (fitRetention).
func newConfig(noSession bool, opts []Option) (config, error) {
	c := defaultConfig()
	if err := optcheck.Build(ErrInvalidOption, noSession, "session", &c, opts); err != nil {
		return c, err
	}
	if err := c.fitWidths(); err != nil {
		return c, err
	}
	return c, c.fitRetention()
}

// fitWidths defaults the widths by traffic to DefaultHotWidth and DefaultColdWidth, brought
// to the window width when it lies beyond them, and refuses widths set beyond it.
func (c *config) fitWidths() error {
	if c.hotWidth == 0 {
		c.hotWidth, c.coldWidth = min(DefaultHotWidth, c.width), max(DefaultColdWidth, c.width)
	}
	if c.hotWidth > c.width || c.coldWidth < c.width {
		return optcheck.Bad(ErrInvalidOption, optcheck.Call("WithWindowWidths", c.hotWidth, c.coldWidth),
			"must be hot <= the window width (%v) <= cold", c.width)
	}
	return nil
}

// WithKeyspace names the keyspace of the tables (default "cassdedup").
func WithKeyspace(name string) Option { return storeopt.Keyspace[*config](name) }

// WithConsistency sets the consistency of plain writes, reads and Paxos commits (default
// QUORUM; LOCAL_QUORUM with LOCAL_SERIAL in one datacenter).
func WithConsistency(cl gocql.Consistency) Option { return storeopt.Consistency[*config](cl) }

// WithSerialConsistency sets the Paxos consistency of rollup watermarks and late claims
// (default SERIAL; LOCAL_SERIAL only when each counter is written and rolled up in one
// datacenter).
func WithSerialConsistency(sc gocql.SerialConsistency) Option {
	return storeopt.SerialConsistency[*config](ErrInvalidOption, sc)
}

// WithClock replaces time.Now, for tests and simulations of history: windows, grace, settling.
// Windows are judged by the cluster's time, which a Log knows as this clock plus its offset
// from a coordinator's clock, measured at its first call and each minute after (see
// WithoutClockCheck, for a clock that simulates history).
func WithClock(now func() time.Time) Option { return storeopt.Clock[*config](ErrInvalidOption, now) }

// WithObserver sets a hook called synchronously on every LWT and write, the
// same lwt.Observer an lwt.Store takes. It must be fast and safe for concurrent use. Default
// none (nil); a typed nil (a nil pointer in the interface) is refused, as its calls would panic.
func WithObserver(o observe.Observer) Option { return storeopt.Observer[*config](ErrInvalidOption, o) }

// WithCounterTables names the tables of the first layout, which a Log still reads and folds but
// no longer writes (defaults "counter_events", "counter_buckets"), and the rollup table
// (default "counter_rollups").
func WithCounterTables(events, buckets, rollups string) Option {
	return func(c *config) error {
		c.events, c.buckets, c.rollups = events, buckets, rollups
		return nil
	}
}

// WithWindowTables names the tables of the spread layout, which a Log writes: the events and the
// window index (defaults "counter_window_events", "counter_windows").
func WithWindowTables(events, windows string) Option {
	return func(c *config) error {
		c.windowEvents, c.windows = events, windows
		return nil
	}
}

// WithBucketWidth sets the width of a window (default 1 s; whole milliseconds, 1 s to 1 h,
// dividing 24 h): the width of a counter's windows while its traffic calls for neither the hot
// nor the cold width (WithWindowWidths). A window's partitions hold rate x width / parts rows
// each, and a rollup folds a window width + grace + settle after it starts. A counter's first
// width is stored with its start (the width of the Log that started it), so Logs with other
// widths count its events once; a counter started by an earlier release has none stored, and
// its windows have the width of the Log that writes them: change it for those only while no
// event can be retried across the change (a retry would land in another window and count twice).
func WithBucketWidth(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Second || d > time.Hour || (24*time.Hour)%d != 0 || d%time.Millisecond != 0, optcheck.Call("WithBucketWidth", d), "must be whole milliseconds, 1s..1h and divide 24h",
		func(c *config) { c.width = d })
}

// WithWindowWidths sets the widths a counter's windows take by its traffic (defaults
// DefaultHotWidth and DefaultColdWidth): windows of hot at HotRate events per second or more,
// of cold under ColdRate, of the window width (WithBucketWidth) otherwise. Whole milliseconds
// dividing 24 h, hot 100 ms to the window width, cold the window width to 1 h; both equal to the
// window width turn widths by traffic off. A cold window's partitions hold rate x cold / parts
// rows each if its counter turns hot (75,000 at 10k events/s with the defaults) until its new
// width takes effect, about a minute and a half later (docs/eventlog.md); a hot counter's total
// sums about rate x hot / 2 rows of its filling window. Every width is stored in the counter's
// rollup row with the time it takes effect, so Logs with other widths count every event once.
func WithWindowWidths(hot, cold time.Duration) Option {
	bad := func(d time.Duration) bool { return d%time.Millisecond != 0 || (24*time.Hour)%d != 0 }
	return optcheck.Set(ErrInvalidOption, hot < 100*time.Millisecond || cold > time.Hour || hot > cold || bad(hot) || bad(cold),
		optcheck.Call("WithWindowWidths", hot, cold), "must be whole milliseconds dividing 24h, 100ms <= hot <= cold <= 1h",
		func(c *config) { c.hotWidth, c.coldWidth = hot, cold })
}

// WithParts sets how many partitions one window of one counter is spread over (default 4; 1 to
// MaxParts), by a hash of the event id. Pick it from the busiest counter's rate: a partition
// holds rate x width / parts rows, to be kept under ~100,000 (the default holds 400k events/s
// with 1 s windows); more parts also spread a hot counter's writes over more replicas, and cost
// each total one more sum of the filling window and one more mark to check per unfolded window
// (in the same query). Parts may change at any time, also for counters
// with data: each writer records the parts it used for a window in the window index and reads
// follow every recorded value, and a window written with several values is summed by event id,
// so an event retried across the change still counts once.
func WithParts(n int) Option {
	return optcheck.Set(ErrInvalidOption, n < 1 || n > MaxParts, optcheck.Call("WithParts", n), fmt.Sprintf("must be 1..%d", MaxParts),
		func(c *config) { c.parts = n })
}

// WithRollupConcurrency sets how many counters a pass of RunRollups or RollupEvery folds at once
// (default 16; 1 to MaxRollupConcurrency). Each fold is a serial read of the counter's rollup
// row, its closed windows' sums and one conditional write, on a partition of its own: a pass
// over many counters takes the number of counters due over this, times a fold's latency, and a
// counter's closed windows wait that long for their fold. Raise it while the node's LWT
// latency stays low; lower it when folds time out.
func WithRollupConcurrency(n int) Option {
	return optcheck.Set(ErrInvalidOption, n < 1 || n > MaxRollupConcurrency, optcheck.Call("WithRollupConcurrency", n), fmt.Sprintf("must be 1..%d", MaxRollupConcurrency),
		func(c *config) { c.rollupConcurrency = n })
}

// WithLegacyBucketWidth sets the bucket width that the first layout (counter_events) was
// written with, before the spread layout (default 1 h, that layout's default; 1 min to 24 h,
// dividing 24 h). Set it only if that log was made WithBucketWidth.
func WithLegacyBucketWidth(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Minute || d > 24*time.Hour || (24*time.Hour)%d != 0, optcheck.Call("WithLegacyBucketWidth", d), "must be 1m..24h and divide 24h",
		func(c *config) { c.legacyWidth = d })
}

// WithGracePeriod sets how long after its window ends an event is still written in its own
// window with one plain write (default 2 s; at least 1 s). A later event, or a later retry, is
// still counted once: it takes the late path (a few reads and one LWT, docs/eventlog.md) and
// lands in the window open then. A longer grace moves more of a lagging consumer's events onto
// the one-write path; it costs a total the marks of that many more windows (read in one query
// with the others), and sums only of the windows written meanwhile.
func WithGracePeriod(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Second, optcheck.Call("WithGracePeriod", d), "must be at least 1s",
		func(c *config) { c.grace = d })
}

// WithSettleTime sets how much longer than the grace period a rollup waits before it folds a
// window (default 1 s; at least 1 s). An on-time write not acknowledged within half of it after
// its window closed takes the late path instead, so no acknowledged write lands after the
// window was folded; the other half is the allowance for the writers' and rollups' readings
// of the cluster's clock, each of which must be known within a quarter of the settle time
// (ErrClockOffset). A node that queues writes for longer than that can still apply a write whose writer
// gave up after the fold: see docs/eventlog.md.
func WithSettleTime(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < time.Second, optcheck.Call("WithSettleTime", d), "must be at least 1s",
		func(c *config) { c.settle = d })
}

// WithMaxClockSkew sets how far ahead of the clock an event time may be (default 1 min; 0 to
// 1 h). Reads include buckets up to now plus this skew.
func WithMaxClockSkew(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d < 0 || d > time.Hour, optcheck.Call("WithMaxClockSkew", d), "must be 0..1h",
		func(c *config) { c.skew = d })
}

// tables are the Log's tables, qualified by the keyspace.
type tables struct {
	events, buckets, rollups, windowEvents, windows, lateClaims, lateSlices string
}

// qualified returns the tables the options named, qualified by the keyspace; a bad name is
// an invalid option.
func (c *config) qualified() (tables, error) {
	t := tables{c.events, c.buckets, c.rollups, c.windowEvents, c.windows, c.lateClaims, c.lateSlices}
	for _, name := range []*string{&t.events, &t.buckets, &t.rollups, &t.windowEvents, &t.windows, &t.lateClaims, &t.lateSlices} {
		q, err := schema.QualifiedName(c.Keyspace, *name)
		if err != nil {
			return tables{}, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		*name = q
	}
	return t, nil
}

// WithoutClockCheck judges windows by the clock of WithClock alone: nothing measures its offset
// from the cluster's, nothing corrects by it, nothing refuses. It is for tests that simulate
// history with a fake clock; writers and rollups built with it must keep their clocks within a
// quarter of the settle time of each other's, and nothing at run time detects when they do
// not. Default: measured (docs/eventlog.md, "Windows, grace and settle time").
func WithoutClockCheck() Option {
	return optcheck.Set(ErrInvalidOption, false, "WithoutClockCheck()", "", func(c *config) { c.unchecked = true })
}
