package counters

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt/observe"
	"github.com/cassdedup/cassdedup/schema"
)

// Option configures a Store. A bad one makes New fail with an error that names it and matches
// ErrInvalidOption.
type Option func(*config) error

type config struct {
	keyspace    string
	ops, byHour string
	values      string
	retention   time.Duration
	shards      int
	bucket      time.Duration // of the claim index
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
	now         func() time.Time
	shadow      *events.Log
	observer    observe.Observer
}

func defaultConfig() config {
	return config{
		keyspace:    schema.DefaultKeyspace,
		ops:         "counter_ops",
		byHour:      "counter_ops_by_hour",
		values:      "counter_values",
		retention:   7 * 24 * time.Hour,
		shards:      DefaultShards,
		bucket:      DefaultIndexBucket,
		consistency: gocql.Quorum,
		serial:      gocql.Serial,
		now:         time.Now,
	}
}

// WithKeyspace names the keyspace of the tables (default "cassdedup").
func WithKeyspace(name string) Option {
	return set(!optcheck.All(schema.ValidateIdentifier, name), optcheck.Call("WithKeyspace", name), notIdentifier, func(c *config) { c.keyspace = name })
}

// WithTables names the claim, claim-index and counter tables (defaults "counter_ops",
// "counter_ops_by_hour", "counter_values").
func WithTables(ops, byHour, values string) Option {
	return set(!optcheck.All(schema.ValidateIdentifier, ops, byHour, values), optcheck.Call("WithTables", ops, byHour, values), notIdentifier,
		func(c *config) { c.ops, c.byHour, c.values = ops, byHour, values })
}

const notIdentifier = "names must be plain CQL identifiers"

// WithRetention sets how long a claim is kept, and so how long a retried operation is
// recognised (default 7 days; 1 min to 90 days).
func WithRetention(d time.Duration) Option {
	return set(d < time.Minute || d > 90*24*time.Hour, optcheck.Call("WithRetention", d), "must be 1m..90d",
		func(c *config) { c.retention = d })
}

// Defaults of the claim index (counter_ops_by_hour): a partition holds one bucket of one shard,
// at most rate x bucket / shards rows: 46,875 at 10k increments/s cluster-wide.
const (
	DefaultShards      = 64
	DefaultIndexBucket = 5 * time.Minute
	// MinIndexCapacity is the cluster-wide increment rate that the index's settings must hold
	// with at most MaxIndexPartitionRows rows per partition; New refuses settings that do not.
	MinIndexCapacity = 10_000
	// MaxIndexPartitionRows is the most rows an index partition may be sized for (Cassandra's
	// guidance for a partition).
	MaxIndexPartitionRows = 100_000
)

// WithShards sets how many partitions one bucket of the claim index is spread over (default 64;
// 1 to 1024). Raise it (or shorten WithIndexBucket) above MinIndexCapacity increments per second:
// a partition holds rate x bucket / shards rows. New refuses a pair that holds less than
// MinIndexCapacity. Lowering it hides older index rows of the higher shards from ListUnapplied
// until they expire; raising it is harmless.
func WithShards(n int) Option {
	return set(n < 1 || n > 1024, optcheck.Call("WithShards", n), "must be 1..1024",
		func(c *config) { c.shards = n })
}

// WithIndexBucket sets the time span of one claim-index partition (default 5 min; whole
// seconds, 1 s to 1 h, dividing 1 h). ListUnapplied reads bucket x shards partitions per span
// it lists: 768 an hour with the defaults, 16 at a time. Changing it is harmless: a listing
// reads every bucket start in its range, and the index rows of an hour-bucketed release too.
func WithIndexBucket(d time.Duration) Option {
	return set(d < time.Second || d > time.Hour || time.Hour%d != 0 || d%time.Second != 0, optcheck.Call("WithIndexBucket", d), "must be whole seconds, 1s..1h, dividing 1h",
		func(c *config) { c.bucket = d })
}

// WithConsistency sets the consistency of increments, reads and commits (default QUORUM).
func WithConsistency(cl gocql.Consistency) Option {
	return set(false, "", "", func(c *config) { c.consistency = cl })
}

// WithSerialConsistency sets the Paxos consistency of claims (default SERIAL; LOCAL_SERIAL
// only when every increment of a counter is made in one datacenter).
func WithSerialConsistency(cl gocql.SerialConsistency) Option {
	return set(cl != gocql.Serial && cl != gocql.LocalSerial, optcheck.Call("WithSerialConsistency", cl), "must be SERIAL or LOCAL_SERIAL",
		func(c *config) { c.serial = cl })
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option {
	return set(now == nil, "WithClock(nil)", "no clock",
		func(c *config) { c.now = now })
}

// WithShadow turns on shadow mode: every increment is also recorded in log, keyed by its
// operation id, before the native counter is touched, so Drift can compare the two while a
// user migrates from native counters to the event log. Op.Time is then required.
func WithShadow(log *events.Log) Option {
	return set(log == nil, "WithShadow(nil)", "no log",
		func(c *config) { c.shadow = log })
}

// WithObserver sets a hook called synchronously on every LWT, increment and unconfirmed
// operation, the same lwt.Observer an lwt.Store takes. It must be fast and safe for concurrent
// use. Default none.
func WithObserver(o observe.Observer) Option {
	return set(false, "", "", func(c *config) { c.observer = o })
}

// set is an option that applies apply, or refuses, named by call, when isBad.
func set(isBad bool, call, why string, apply func(*config)) Option {
	return optcheck.Set(ErrInvalidOption, isBad, call, why, apply)
}

// validate checks what no single option can: that the index's shards and bucket together hold
// MinIndexCapacity.
func (c *config) validate() error {
	if rows := MinIndexCapacity * c.bucket.Seconds() / float64(c.shards); rows > MaxIndexPartitionRows {
		return fmt.Errorf("%w: WithShards(%d) with WithIndexBucket(%v) put %.0f rows in a partition at %d increments/s (more than %d): add shards or shorten the bucket",
			ErrInvalidOption, c.shards, c.bucket, rows, MinIndexCapacity, MaxIndexPartitionRows)
	}
	return nil
}
