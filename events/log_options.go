package events

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// LogOption configures a Log. Options are validated by NewLog.
type LogOption func(*logConfig)

type logConfig struct {
	keyspace    string
	events      string
	buckets     string
	rollups     string
	width       time.Duration
	grace       time.Duration
	settle      time.Duration
	skew        time.Duration
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
	now         func() time.Time
}

func defaultLogConfig() logConfig {
	return logConfig{
		keyspace:    schema.DefaultKeyspace,
		events:      "counter_events",
		buckets:     "counter_buckets",
		rollups:     "counter_rollups",
		width:       time.Hour,
		grace:       time.Hour,
		settle:      5 * time.Minute,
		skew:        time.Minute,
		consistency: gocql.Quorum,
		serial:      gocql.Serial,
		now:         time.Now,
	}
}

// WithLogKeyspace names the keyspace of the log's tables (default "cassdedup").
func WithLogKeyspace(name string) LogOption { return func(c *logConfig) { c.keyspace = name } }

// WithLogTables names the event, bucket-index and rollup tables (defaults "counter_events",
// "counter_buckets", "counter_rollups").
func WithLogTables(events, buckets, rollups string) LogOption {
	return func(c *logConfig) { c.events, c.buckets, c.rollups = events, buckets, rollups }
}

// WithBucketWidth sets the width of a time bucket (default 1 h; 1 min to 24 h, dividing 24 h).
// The width is part of the data: an event's bucket is computed from it, so never change it for
// a log that already holds events.
func WithBucketWidth(d time.Duration) LogOption { return func(c *logConfig) { c.width = d } }

// WithGracePeriod sets how long after its bucket ends an event is still accepted (default 1 h;
// at least 1 s). Every retry of one event must be made within it; later ones fail with
// ErrBucketClosed rather than be lost from the total.
func WithGracePeriod(d time.Duration) LogOption { return func(c *logConfig) { c.grace = d } }

// WithSettleTime sets how much longer than the grace period a rollup waits before it folds a
// bucket (default 5 min; at least 1 s). It must exceed the clock skew between writers and
// rollup workers plus the longest a write can take, so no write accepted at the end of the
// grace period lands after the bucket was folded.
func WithSettleTime(d time.Duration) LogOption { return func(c *logConfig) { c.settle = d } }

// WithMaxClockSkew sets how far ahead of the clock an event time may be (default 1 min; 0 to
// 1 h). Reads include buckets up to now plus this skew.
func WithMaxClockSkew(d time.Duration) LogOption { return func(c *logConfig) { c.skew = d } }

// WithLogConsistency sets the consistency of event writes and reads (default QUORUM; use
// LOCAL_QUORUM with several datacenters when each runs its own rollups).
func WithLogConsistency(cl gocql.Consistency) LogOption {
	return func(c *logConfig) { c.consistency = cl }
}

// WithLogSerialConsistency sets the Paxos consistency of the rollup watermark (default SERIAL;
// LOCAL_SERIAL only when a counter is rolled up in one datacenter).
func WithLogSerialConsistency(cl gocql.SerialConsistency) LogOption {
	return func(c *logConfig) { c.serial = cl }
}

// WithLogClock replaces time.Now, for tests and simulations of history.
func WithLogClock(now func() time.Time) LogOption { return func(c *logConfig) { c.now = now } }

func (c *logConfig) validate() error {
	switch {
	case c.width < time.Minute || c.width > 24*time.Hour || (24*time.Hour)%c.width != 0:
		return fmt.Errorf("%w: bucket width %v must be 1m..24h and divide 24h", ErrInvalidOption, c.width)
	case c.grace < time.Second:
		return fmt.Errorf("%w: grace period %v must be at least 1s", ErrInvalidOption, c.grace)
	case c.settle < time.Second:
		return fmt.Errorf("%w: settle time %v must be at least 1s", ErrInvalidOption, c.settle)
	case c.skew < 0 || c.skew > time.Hour:
		return fmt.Errorf("%w: clock skew %v must be 0..1h", ErrInvalidOption, c.skew)
	case c.now == nil:
		return fmt.Errorf("%w: nil clock", ErrInvalidOption)
	case c.serial != gocql.Serial && c.serial != gocql.LocalSerial:
		return fmt.Errorf("%w: serial consistency %v must be SERIAL or LOCAL_SERIAL", ErrInvalidOption, c.serial)
	}
	return nil
}

// serialRead returns the serial consistency as a read consistency: a SELECT at SERIAL sees
// every committed Paxos write and completes one in flight.
func (c *logConfig) serialRead() gocql.Consistency { return gocql.Consistency(c.serial) }
