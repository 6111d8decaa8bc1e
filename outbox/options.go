package outbox

import (
	"log/slog"
	"math"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/internal/textcheck"
	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/schema"
)

// Defaults of the options. The shard count, the bucket width and the horizon lay out the intents
// table, so every stager, relay and admin of one keyspace must use the same ones: the first of
// them stores the layout in outbox_layout and every other one checks it (ErrLayoutMismatch).
const (
	DefaultShards       = 16
	DefaultBucket       = time.Minute
	DefaultHorizon      = time.Minute      // how long a bucket stays open after it ends
	DefaultRetention    = 24 * time.Hour   // the records' retention (lwt.DefaultRetention)
	DefaultRelayLease   = 10 * time.Second // how long a relay holds a shard without renewal
	DefaultPollInterval = 200 * time.Millisecond
	DefaultMaxSweep     = 60  // closed buckets a relay sweeps per shard and pass
	DefaultPublishBatch = 500 // messages per Publish call
	DefaultRelayName    = "outbox"
	DefaultIntentsTable = "outbox_intents"   // the intents of staged runs (schema/cql/010_outbox.cql)
	DefaultRelaysTable  = "outbox_relays"    // the relays' shard leases and cursors
	DefaultRecordsTable = "idempotency_keys" // the records whose runs stage events
	ColumnName          = "outbox"           // the records' column that carries a run's events
	// DefaultPublishTimeout bounds one Publish call; it must stay inside the relay's lease.
	DefaultPublishTimeout = 4 * time.Second
	DefaultSlowPublish    = time.Second // a Publish that takes longer is logged and counted (Stats.SlowPublishes)
	DefaultMaxAttempts    = 8           // failed publications of an event before it is parked
	DefaultBackoff        = time.Second // the pause after an event's first failed publication, doubled after each
	DefaultMaxBackoff     = time.Minute // the longest pause between an event's publications
	// DefaultPendingGrace is how long past its record's expiry a pending intent (and the copy
	// of its events) is kept: the relay outage the outbox survives beyond the retention.
	DefaultPendingGrace = 7 * 24 * time.Hour
)

// Defaults of the arrivals (schema/cql/019_outbox_arrivals.cql), by which a relay finds the
// intents staged since its last pass.
const (
	DefaultArrivalsTable = "outbox_arrivals" // an arrival row per intent, clustered by staging time
	// DefaultArrivalLag is how long after its staging time a relay first looks for an intent:
	// the time a staging write may take to land (see WithArrivalLag).
	DefaultArrivalLag = time.Second
)

// Option configures an Outbox, a Relay and an Admin alike: the keyspace, the tables, the
// layout (shards, bucket, horizon, key order), the retention and pending grace by which rows
// expire, the consistencies, the clock and the logger, which stagers, relays and admins of one
// outbox must agree on. New, NewRelay and NewAdmin each accept it. A bad one makes the
// constructor fail with an error that names it and matches ErrInvalidOption.
type Option func(*config) error

// StagerOption is what New accepts: an Option, or WithMaxSize (a StagerOnlyOption).
type StagerOption interface{ stagerOption() Option }

// RelayOption is what NewRelay accepts: an Option, one of the relay's own (a RelayOnlyOption:
// WithPollInterval, WithRelayLease, ...) or WithRelayName.
type RelayOption interface{ relayOption() Option }

// AdminOption is what NewAdmin accepts: an Option, or WithRelayName.
type AdminOption interface{ adminOption() Option }

// RelayOnlyOption configures a Relay alone (how it polls, publishes, backs off and holds its
// shards): NewRelay accepts it, and passing it to New or NewAdmin does not compile.
type RelayOnlyOption func(*config) error

// GroupOption names the relay group (WithRelayName): NewRelay and NewAdmin accept it, New
// does not compile with it.
type GroupOption func(*config) error

// StagerOnlyOption configures an Outbox's staging alone (WithMaxSize): New accepts it,
// NewRelay and NewAdmin do not compile with it.
type StagerOnlyOption func(*config) error

func (o Option) stagerOption() Option           { return o }
func (o Option) relayOption() Option            { return o }
func (o Option) adminOption() Option            { return o }
func (o RelayOnlyOption) relayOption() Option   { return Option(o) }
func (o GroupOption) relayOption() Option       { return Option(o) }
func (o GroupOption) adminOption() Option       { return Option(o) }
func (o StagerOnlyOption) stagerOption() Option { return Option(o) }

type config struct {
	keyspace        string
	records         string // the records table's name
	intents, relays string // the outbox tables' names
	arrivals        string
	q               qualified
	shards          int
	bucket, horizon time.Duration
	retention       time.Duration
	grace           time.Duration
	lease, poll     time.Duration
	lag             time.Duration // WithArrivalLag
	maxSweep        int
	publishBatch    int
	maxShards       int
	maxSize         int
	name            string
	publishTimeout  time.Duration
	slowPublish     time.Duration
	maxAttempts     int
	backoff         time.Duration
	maxBack         time.Duration
	logger          *slog.Logger
	keyOrder        bool // WithKeyOrder: the events of one key are published in staging order
	// Which layout settings an option set: an Admin adopts the stored layout for the others.
	shardsSet, bucketSet, horizonSet bool
	keyOrderSet                      bool
	publishSet                       bool
	consistency                      gocql.Consistency
	serial                           gocql.SerialConsistency
	now                              func() time.Time // the time judged by: the cluster's, or local's under WithoutClockCheck
	local                            func() time.Time // the component's own clock (WithClock)
	unchecked                        bool             // WithoutClockCheck
	meter                            *clock.Meter     // nil under WithoutClockCheck
}

// newConfig refuses a constructor's missing argument (a nil session, or publisher) and applies
// opts to the defaults.
func newConfig(missing bool, opts []Option) (config, error) {
	c := config{
		keyspace: schema.DefaultKeyspace, records: DefaultRecordsTable,
		intents: DefaultIntentsTable, relays: DefaultRelaysTable, arrivals: DefaultArrivalsTable, shards: DefaultShards,
		bucket: DefaultBucket, horizon: DefaultHorizon, retention: DefaultRetention,
		lease: DefaultRelayLease, poll: DefaultPollInterval, maxSweep: DefaultMaxSweep,
		publishBatch: DefaultPublishBatch, maxShards: DefaultShards, maxSize: DefaultMaxSize, name: DefaultRelayName,
		consistency: gocql.Quorum, serial: gocql.Serial, now: time.Now, grace: DefaultPendingGrace,
		publishTimeout: DefaultPublishTimeout, slowPublish: DefaultSlowPublish, maxAttempts: DefaultMaxAttempts,
		backoff: DefaultBackoff, maxBack: DefaultMaxBackoff, logger: slog.New(slog.DiscardHandler), lag: DefaultArrivalLag,
	}
	if err := optcheck.Build(ErrInvalidOption, missing, "session or publisher", &c, opts); err != nil {
		return c, err
	}
	// A Publish must end while the relay still holds the shard: past the lease a successor may
	// be publishing the same events, and the relay's own marks would be fenced off.
	if !c.publishSet {
		c.publishTimeout = min(c.publishTimeout, c.lease*2/5)
	}
	if c.publishTimeout >= c.lease {
		return c, optcheck.Bad(ErrInvalidOption, optcheck.Call("WithPublishTimeout", c.publishTimeout), "must be shorter than the relay lease %v", c.lease)
	}
	// A lag past half the horizon would leave the end of each bucket to its last sweep: a
	// stager whose write takes longer than that fails anyway (ErrIntentLate).
	if c.lag > c.horizon/2 {
		return c, optcheck.Bad(ErrInvalidOption, optcheck.Call("WithArrivalLag", c.lag), "must be at most half the horizon %v", c.horizon)
	}
	if c.maxBack < c.backoff {
		return c, optcheck.Bad(ErrInvalidOption, optcheck.Call("WithPublishBackoff", c.backoff, c.maxBack), "the first pause is longer than the longest")
	}
	// The names were validated by their options, so qualifying them cannot fail.
	c.q = qualified{records: qualify(c.keyspace, c.records), intents: qualify(c.keyspace, c.intents), relays: qualify(c.keyspace, c.relays),
		arrivals: qualify(c.keyspace, c.arrivals), layout: qualify(c.keyspace, layoutTable), parked: qualify(c.keyspace, parkedTable)}
	return c, nil
}

// qualified holds the tables' names as statements write them: keyspace-qualified and quoted.
type qualified struct{ records, intents, relays, arrivals, layout, parked string }

func qualify(keyspace, table string) string {
	q, _ := schema.QualifiedName(keyspace, table)
	return q
}

// set is an option that applies apply, or refuses, named by call, when isBad.
func set(isBad bool, call, why string, apply func(*config)) Option {
	return optcheck.Set(ErrInvalidOption, isBad, call, why, apply)
}

const notIdentifier = "names must be plain CQL identifiers"

// WithKeyspace sets the keyspace of the records and the outbox tables. Default cassdedup.
func WithKeyspace(ks string) Option {
	return set(!optcheck.All(schema.ValidateIdentifier, ks), optcheck.Call("WithKeyspace", ks), notIdentifier,
		func(c *config) { c.keyspace = ks })
}

// WithTables names the outbox's tables in the keyspace: the intents, the relays' leases and
// the intents' arrivals (defaults DefaultIntentsTable, DefaultRelaysTable,
// DefaultArrivalsTable). Every stager, relay and admin of one outbox must use the same names;
// each must be a plain CQL identifier, and two outboxes must not share an arrivals table (its
// rows do not say which intents table they announce). schema.Apply creates the default names
// only: create others with the columns of schema/cql/010_outbox.cql, 012_guard_outbox.cql,
// 015_outbox_durable.cql, 019_outbox_arrivals.cql and 020_outbox_key_order.cql. The layout
// and the parked events stay in outbox_layout and outbox_parked, keyed by the intents table's
// name.
func WithTables(intents, relays, arrivals string) Option {
	return set(!optcheck.All(schema.ValidateIdentifier, intents, relays, arrivals), optcheck.Call("WithTables", intents, relays, arrivals), notIdentifier,
		func(c *config) { c.intents, c.relays, c.arrivals = intents, relays, arrivals })
}

// WithRecordsTable names the table of the records whose runs stage events, the lwt.Table of the
// store the runs use (default DefaultRecordsTable). It must be a plain CQL identifier.
func WithRecordsTable(name string) Option {
	return set(!optcheck.All(schema.ValidateIdentifier, name), optcheck.Call("WithRecordsTable", name), notIdentifier,
		func(c *config) { c.records = name })
}

// WithShards sets the number of shards per bucket: rows per intents partition are rate x bucket
// / shards. Default 16; 1 to 1024. Fixed for the life of the data.
func WithShards(n int) Option {
	return set(n < 1 || n > 1024, optcheck.Call("WithShards", n), "must be 1..1024",
		func(c *config) { c.shards, c.shardsSet = n, true; c.maxShards = max(c.maxShards, n) })
}

// WithBucket sets the width of a time bucket. Default 1m; 1s to 1h, a whole number of seconds.
func WithBucket(d time.Duration) Option {
	return set(d < time.Second || d > time.Hour || d%time.Second != 0, optcheck.Call("WithBucket", d), "must be whole seconds, 1s..1h",
		func(c *config) { c.bucket, c.bucketSet = d, true })
}

// WithHorizon sets how long a bucket stays open after its end: a relay sweeps a bucket for the
// last time (keeping only its pending intents in view) once the horizon has passed. A stager whose
// intent write takes longer than half of it fails the run (ErrIntentLate); the other half is the
// stagers' and relays' allowance for their readings of the cluster's time, each of which must be
// known within an eighth of the horizon (ErrClockOffset). Default 1m; 2s to 1h.
func WithHorizon(d time.Duration) Option {
	return set(d < 2*time.Second || d > time.Hour, optcheck.Call("WithHorizon", d), "must be 2s..1h",
		func(c *config) { c.horizon, c.horizonSet = d, true })
}

// WithRetention sets the records' retention (lwt.WithRetention of the store the runs use): an
// intent lives that long plus an hour, and a relay starting afresh sweeps that far back.
// Default 24h.
func WithRetention(d time.Duration) Option {
	return set(d < time.Second || d > 365*24*time.Hour, optcheck.Call("WithRetention", d), "must be 1s..1 year",
		func(c *config) { c.retention = d })
}

// WithPendingGrace sets how long past its record's expiry a pending intent is kept, with the
// copy of its events taken when the run sealed its completion. A relay that comes back within
// the record's retention publishes as if nothing happened; within the grace after it, it parks
// the events whose record expired (ErrCommitUnknown, reason "expired") for an operator to
// replay or discard. Longer keeps more intents on disk (docs/outbox.md). Default 7 days; 1h
// to 1 year.
func WithPendingGrace(d time.Duration) Option {
	return set(d < time.Hour || d > 365*24*time.Hour, optcheck.Call("WithPendingGrace", d), "must be 1h..1 year",
		func(c *config) { c.grace = d })
}

// WithPublishTimeout bounds each Publish call of a relay: its ctx ends after d, or earlier when
// the relay's lease of the shard would run out first, so a stuck broker cannot keep a pass past
// its lease (a successor would be publishing meanwhile). A timed-out Publish counts as a failed
// attempt of its events. Default 4s, or two fifths of a shorter relay lease; at least 100ms and
// shorter than the lease.
func WithPublishTimeout(d time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(d < 100*time.Millisecond, optcheck.Call("WithPublishTimeout", d), "must be at least 100ms",
		func(c *config) { c.publishTimeout, c.publishSet = d, true }))
}

// WithSlowPublish sets how long a Publish may take before the relay logs it (at Warn) and counts
// it in Stats.SlowPublishes: a broker that slows down shows long before it stalls. Default 1s.
func WithSlowPublish(d time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(d <= 0, optcheck.Call("WithSlowPublish", d), "must be positive",
		func(c *config) { c.slowPublish = d }))
}

// WithMaxAttempts sets how many times the publisher may reject an operation's events before
// the relay parks them in outbox_parked (Admin.ListParked, cassdedup outbox parked), where an
// operator replays or discards them. Only a rejection of the events themselves counts: the
// publisher marked their error ErrRejected (per message, or for a call that carried nothing
// else), or panicked on them alone. A timeout, the end of the publish deadline, or a call that
// failed as a whole (the broker unreachable or slow) counts nothing and parks nothing: the
// events stay pending and back off (WithPublishBackoff), logged at Warn and counted in
// Stats.Failed and Stats.Transient. Default 8; 1 to 1000.
func WithMaxAttempts(n int) RelayOnlyOption {
	return RelayOnlyOption(set(n < 1 || n > 1000, optcheck.Call("WithMaxAttempts", n), "must be 1..1000",
		func(c *config) { c.maxAttempts = n }))
}

// WithPublishBackoff sets the pause after an event's first rejection (doubled after each
// further one) and its maximum. A failure that is not a rejection (a timeout, the broker away)
// waits the same way, doubled after each bucket publication of the relay that failed whole,
// back to the first pause once the publisher accepts again. Default 1s and 1m.
func WithPublishBackoff(first, maximum time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(first <= 0 || maximum <= 0, optcheck.Call("WithPublishBackoff", first, maximum), "must be positive",
		func(c *config) { c.backoff, c.maxBack = first, maximum }))
}

// WithKeyOrder publishes the events of one key (Event.Key) in the order their operations were
// staged, across operations, as a Debezium user expects of an aggregate: an event waits while an
// earlier event of its key is undecided (its run in flight), backing off after a failed
// publication, or unpublished for any other reason, and goes out once that one is published,
// dropped (its run did not commit) or parked. Keys do not wait for each other.
//
// Under it every event of a run must carry the same key (Stage refuses another with
// ErrMixedKeys, which fails the run permanently); a run whose events all have the empty key has
// no order and waits for nothing. The run's intent goes in the shard of its events' key rather
// than of its operation's, so every event of a key is published by the one relay that holds
// that shard: one hot key is one relay's throughput, and the operations of a key go out one
// Publish call after another. A parked event breaks the order only by its absence; an
// operator's replay or unpark publishes it again later, after the events staged since.
//
// Like the shard count it lays out the intents table: stagers, relays and admins of one table
// must agree on it, and the first of them stores it in outbox_layout (schema/cql/
// 020_outbox_key_order.cql); one that disagrees is refused with ErrLayoutMismatch. An Admin
// takes it from the stored layout. docs/outbox.md ("Ordering") says what it costs.
func WithKeyOrder() Option {
	return set(false, "WithKeyOrder()", "",
		func(c *config) { c.keyOrder, c.keyOrderSet = true, true })
}

// WithLogger sets the logger of a relay: slow publications, failed ones, parked events, lost
// leases and fenced shards are logged there (the same events are counted in Stats). A stager's,
// a relay's and an admin's clock measurements log there too: an offset from the cluster's clock
// over a second, a move of more than a second, a failed measurement, a refusal
// (ErrClockOffset). Default none.
func WithLogger(l *slog.Logger) Option {
	return set(l == nil, "WithLogger(nil)", "no logger",
		func(c *config) { c.logger = l })
}

// WithRelayLease sets how long a relay holds a shard without renewing it; a relay stalled past
// it is fenced off. Default 10s; at least 1s.
func WithRelayLease(d time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(d < time.Second, optcheck.Call("WithRelayLease", d), "must be at least 1s",
		func(c *config) { c.lease = d }))
}

// WithArrivalLag sets how long after its staging time a relay first looks for an intent. A
// pass reads the arrivals (019_outbox_arrivals.cql) staged since the last one up to the lag
// before now, so the lag must cover a staging write's latency and the difference between the
// stagers' readings of the cluster's time and the relay's (their bounds, about a millisecond each
// on a LAN): an intent that lands later than that is not lost but waits
// for its bucket's last sweep (the bucket width and the horizon after its staging, 2 minutes
// with the defaults). Every committed intent is published at least the lag after it was
// staged. Default 1s; 1ms to half the horizon.
func WithArrivalLag(d time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(d < time.Millisecond || d > time.Hour/2, optcheck.Call("WithArrivalLag", d), "must be 1ms..30m, at most half the horizon",
		func(c *config) { c.lag = d }))
}

// WithPollInterval sets the pause between a relay's passes. Default 200ms.
func WithPollInterval(d time.Duration) RelayOnlyOption {
	return RelayOnlyOption(set(d <= 0, optcheck.Call("WithPollInterval", d), "must be positive",
		func(c *config) { c.poll = d }))
}

// WithMaxShards caps the shards one relay holds, so several relays share them: run k relays
// with ceil(shards/k). Default all.
func WithMaxShards(n int) RelayOnlyOption {
	return RelayOnlyOption(set(n < 1, optcheck.Call("WithMaxShards", n), "must be at least 1",
		func(c *config) { c.maxShards = n }))
}

// WithRelayName names the relay group whose relays share the shards (1 to MaxNameLength bytes
// of UTF-8: it keys the relays' table). Default "outbox".
func WithRelayName(name string) GroupOption {
	p := textcheck.Problem(name, MaxNameLength)
	return GroupOption(set(p != "", optcheck.Call("WithRelayName", name), p, func(c *config) { c.name = name }))
}

// WithPublishBatch sets the most messages per Publish call. Default 500.
func WithPublishBatch(n int) RelayOnlyOption {
	return RelayOnlyOption(set(n < 1, optcheck.Call("WithPublishBatch", n), "must be at least 1",
		func(c *config) { c.publishBatch = n }))
}

// WithMaxSize sets the most bytes of encoded events one run may stage. Default 256 KiB; at most
// lwt.MaxResultSizeLimit.
func WithMaxSize(n int) StagerOnlyOption {
	return StagerOnlyOption(set(n < 1 || n > 8<<20, optcheck.Call("WithMaxSize", n), "must be 1 byte..8 MiB",
		func(c *config) { c.maxSize = n }))
}

// WithSerialConsistency sets the consistency of the relay's serial reads and marks: gocql.Serial
// (default) or gocql.LocalSerial.
func WithSerialConsistency(s gocql.SerialConsistency) Option {
	return set(s != gocql.Serial && s != gocql.LocalSerial, optcheck.Call("WithSerialConsistency", s), "must be SERIAL or LOCAL_SERIAL",
		func(c *config) { c.serial = s })
}

// WithConsistency sets the consistency of plain reads and writes. Default QUORUM.
func WithConsistency(cl gocql.Consistency) Option {
	return set(cl != gocql.Quorum && cl != gocql.LocalQuorum && cl != gocql.All && cl != gocql.EachQuorum, optcheck.Call("WithConsistency", cl), "use QUORUM or LOCAL_QUORUM",
		func(c *config) { c.consistency = cl })
}

// WithClock sets the component's clock. Default time.Now. Stagers and relays judge buckets,
// horizons and leases by the cluster's time, which they know as this clock plus its offset from
// the coordinator's clock, measured at the first use and each minute after (see
// WithoutClockCheck): a stager whose clock is minutes off buckets its intents where every relay
// looks for them.
func WithClock(now func() time.Time) Option {
	return set(now == nil, "WithClock(nil)", "no clock",
		func(c *config) { c.now = now })
}

// WithoutClockCheck judges time by the clock of WithClock alone: nothing measures its offset
// from the cluster's, nothing corrects by it, nothing refuses. It is for tests that simulate
// history with a fake clock; a stager and a relay built with it must keep their clocks within
// a quarter of the horizon of each other's, and nothing at run time detects when they do not.
// Default: measured (docs/outbox.md, "Time").
func WithoutClockCheck() Option {
	return set(false, "WithoutClockCheck()", "", func(c *config) { c.unchecked = true })
}

// bucketOf is the bucket of t: unix seconds truncated to the width.
func (c config) bucketOf(t time.Time) int64 {
	w := int64(c.bucket / time.Second)
	s := t.Unix()
	return s - ((s%w)+w)%w
}

// intentTTL is the TTL of the static relay fence and of intents written before expires_at was
// stored: the retention plus an hour.
func (c config) intentTTL() int { return int((c.retention + time.Hour) / time.Second) }

// rowExpiry is when an intent of a record expiring at recordExpiry expires: every write of the
// row expires at that same instant, so no half-expired intent can look pending again. It
// outlives the record by the grace, so a relay back from an outage finds the copy of its
// events.
func (c config) rowExpiry(recordExpiry time.Time) time.Time {
	return recordExpiry.Add(c.bucket + c.horizon + c.grace)
}

// arrivalTTL is the TTL of an arrival: it is read only while its bucket is open by the relay's
// clock (the width and the horizon after its start), which may lag the stager's by half the
// horizon; the rest of the second horizon is margin.
func (c config) arrivalTTL() int { return int((c.bucket + 2*c.horizon) / time.Second) }

// ttlUntil is the TTL in seconds of a write that must expire at t (at least 1).
func (c config) ttlUntil(t time.Time) int {
	return max(1, int(math.Ceil(t.Sub(c.now()).Seconds())))
}

// backoffAfter is the pause after the n-th failed publication of an event.
func (c config) backoffAfter(n int) time.Duration {
	d := c.backoff
	for i := 1; i < n && d < c.maxBack; i++ {
		d *= 2
	}
	return min(d, c.maxBack)
}
