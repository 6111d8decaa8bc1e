package counters

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/schema"
)

// Option configures a Store. Options are validated by New.
type Option func(*config)

type config struct {
	keyspace    string
	ops, byHour string
	values      string
	retention   time.Duration
	shards      int
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
	now         func() time.Time
	shadow      *events.Log
	observer    lwt.Observer
}

func defaultConfig() config {
	return config{
		keyspace:    schema.DefaultKeyspace,
		ops:         "counter_ops",
		byHour:      "counter_ops_by_hour",
		values:      "counter_values",
		retention:   7 * 24 * time.Hour,
		shards:      16,
		consistency: gocql.Quorum,
		serial:      gocql.Serial,
		now:         time.Now,
	}
}

// WithKeyspace names the keyspace of the tables (default "cassdedup").
func WithKeyspace(name string) Option { return func(c *config) { c.keyspace = name } }

// WithTables names the claim, claim-index and counter tables (defaults "counter_ops",
// "counter_ops_by_hour", "counter_values").
func WithTables(ops, byHour, values string) Option {
	return func(c *config) { c.ops, c.byHour, c.values = ops, byHour, values }
}

// WithRetention sets how long a claim is kept, and so how long a retried operation is
// recognised (default 7 days; 1 min to 90 days).
func WithRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithShards sets how many partitions one hour of the claim index is spread over (default 16;
// 1 to 1024). Changing it hides older index rows from ListUnapplied until they expire.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithConsistency sets the consistency of increments, reads and commits (default QUORUM).
func WithConsistency(cl gocql.Consistency) Option { return func(c *config) { c.consistency = cl } }

// WithSerialConsistency sets the Paxos consistency of claims (default SERIAL; LOCAL_SERIAL
// only when every increment of a counter is made in one datacenter).
func WithSerialConsistency(cl gocql.SerialConsistency) Option {
	return func(c *config) { c.serial = cl }
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithShadow turns on shadow mode: every increment is also recorded in log, keyed by its
// operation id, before the native counter is touched, so Drift can compare the two while a
// user migrates from native counters to the event log. Op.Time is then required.
func WithShadow(log *events.Log) Option { return func(c *config) { c.shadow = log } }

// WithObserver sets a hook called synchronously on every LWT, increment and unconfirmed
// operation, the same lwt.Observer an lwt.Store takes. It must be fast and safe for concurrent
// use. Default none.
func WithObserver(o lwt.Observer) Option { return func(c *config) { c.observer = o } }

func (c *config) validate() error {
	switch {
	case c.retention < time.Minute || c.retention > 90*24*time.Hour:
		return fmt.Errorf("%w: retention %v must be 1m..90d", ErrInvalidOption, c.retention)
	case c.shards < 1 || c.shards > 1024:
		return fmt.Errorf("%w: %d shards must be 1..1024", ErrInvalidOption, c.shards)
	case c.serial != gocql.Serial && c.serial != gocql.LocalSerial:
		return fmt.Errorf("%w: serial consistency %v must be SERIAL or LOCAL_SERIAL", ErrInvalidOption, c.serial)
	case c.now == nil:
		return fmt.Errorf("%w: nil clock", ErrInvalidOption)
	}
	return nil
}
