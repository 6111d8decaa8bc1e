package outbox

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// Defaults of the options. The shard count and the bucket width lay out the intents table, so
// every stager and relay of one keyspace must use the same ones; a relay refuses a shard count
// other than the one its cursors were written with.
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
	ColumnName          = "outbox" // the records' column that carries a run's events
)

// Option configures an Outbox or a Relay.
type Option func(*config) error

type config struct {
	keyspace, records string
	shards            int
	bucket, horizon   time.Duration
	retention         time.Duration
	lease, poll       time.Duration
	maxSweep          int
	publishBatch      int
	maxShards         int
	maxSize           int
	name              string
	consistency       gocql.Consistency
	serial            gocql.SerialConsistency
	now               func() time.Time
}

func newConfig(opts []Option) (config, error) {
	c := config{
		keyspace: schema.DefaultKeyspace, records: "idempotency_keys", shards: DefaultShards,
		bucket: DefaultBucket, horizon: DefaultHorizon, retention: DefaultRetention,
		lease: DefaultRelayLease, poll: DefaultPollInterval, maxSweep: DefaultMaxSweep,
		publishBatch: DefaultPublishBatch, maxShards: DefaultShards, maxSize: DefaultMaxSize, name: DefaultRelayName,
		consistency: gocql.Quorum, serial: gocql.Serial, now: time.Now,
	}
	for _, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOption, fmt.Sprintf(format, args...))
}

// WithKeyspace sets the keyspace of the records and the outbox tables. Default cassdedup.
func WithKeyspace(ks string) Option {
	return func(c *config) error {
		if _, err := schema.QuoteIdentifier(ks); err != nil {
			return fmt.Errorf("%w: keyspace: %w", ErrInvalidOption, err)
		}
		c.keyspace = ks
		return nil
	}
}

// WithShards sets the number of shards per bucket: rows per intents partition are rate x bucket
// / shards. Default 16; 1 to 1024. Fixed for the life of the data.
func WithShards(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 1024 {
			return invalid("shards %d must be between 1 and 1024", n)
		}
		c.shards = n
		c.maxShards = max(c.maxShards, n)
		return nil
	}
}

// WithBucket sets the width of a time bucket. Default 1m; 1s to 1h, a whole number of seconds.
func WithBucket(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second || d > time.Hour || d%time.Second != 0 {
			return invalid("bucket %v must be whole seconds between 1s and 1h", d)
		}
		c.bucket = d
		return nil
	}
}

// WithHorizon sets how long a bucket stays open after its end: a relay sweeps a bucket for the
// last time (keeping only its pending intents in view) once the horizon has passed. A stager whose
// intent write takes longer than half of it fails the run (ErrIntentLate), so the clocks of
// stagers and relays may differ by up to half the horizon. Default 1m; 2s to 1h.
func WithHorizon(d time.Duration) Option {
	return func(c *config) error {
		if d < 2*time.Second || d > time.Hour {
			return invalid("horizon %v must be between 2s and 1h", d)
		}
		c.horizon = d
		return nil
	}
}

// WithRetention sets the records' retention (lwt.WithRetention of the store the runs use): an
// intent lives that long plus an hour, and a relay starting afresh sweeps that far back.
// Default 24h.
func WithRetention(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second || d > 365*24*time.Hour {
			return invalid("retention %v must be between 1s and 1 year", d)
		}
		c.retention = d
		return nil
	}
}

// WithRelayLease sets how long a relay holds a shard without renewing it; a relay stalled past
// it is fenced off. Default 10s; at least 1s.
func WithRelayLease(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second {
			return invalid("relay lease %v must be at least 1s", d)
		}
		c.lease = d
		return nil
	}
}

// WithPollInterval sets the pause between a relay's passes. Default 200ms.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("poll interval %v must be positive", d)
		}
		c.poll = d
		return nil
	}
}

// WithMaxShards caps the shards one relay holds, so several relays share them: run k relays
// with ceil(shards/k). Default all.
func WithMaxShards(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("max shards %d must be at least 1", n)
		}
		c.maxShards = n
		return nil
	}
}

// WithRelayName names the relay group whose relays share the shards. Default "outbox".
func WithRelayName(name string) Option {
	return func(c *config) error {
		if name == "" || len(name) > MaxNameLength {
			return invalid("relay name %q must be 1 to %d bytes", name, MaxNameLength)
		}
		c.name = name
		return nil
	}
}

// WithPublishBatch sets the most messages per Publish call. Default 500.
func WithPublishBatch(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return invalid("publish batch %d must be at least 1", n)
		}
		c.publishBatch = n
		return nil
	}
}

// WithMaxSize sets the most bytes of encoded events one run may stage. Default 256 KiB; at most
// lwt.MaxResultSizeLimit.
func WithMaxSize(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 8<<20 {
			return invalid("max size %d must be between 1 and 8 MiB", n)
		}
		c.maxSize = n
		return nil
	}
}

// WithSerialConsistency sets the consistency of the relay's serial reads and marks: gocql.Serial
// (default) or gocql.LocalSerial.
func WithSerialConsistency(s gocql.SerialConsistency) Option {
	return func(c *config) error {
		if s != gocql.Serial && s != gocql.LocalSerial {
			return invalid("serial consistency %v", s)
		}
		c.serial = s
		return nil
	}
}

// WithConsistency sets the consistency of plain reads and writes. Default QUORUM.
func WithConsistency(cl gocql.Consistency) Option {
	return func(c *config) error {
		if cl != gocql.Quorum && cl != gocql.LocalQuorum && cl != gocql.All && cl != gocql.EachQuorum {
			return invalid("consistency %v: use QUORUM or LOCAL_QUORUM", cl)
		}
		c.consistency = cl
		return nil
	}
}

// WithClock sets the clock of buckets and lease judgements in the caller (tests). Default
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return invalid("nil clock")
		}
		c.now = now
		return nil
	}
}

// bucketOf is the bucket of t: unix seconds truncated to the width.
func (c config) bucketOf(t time.Time) int64 {
	w := int64(c.bucket / time.Second)
	s := t.Unix()
	return s - ((s%w)+w)%w
}

// intentTTL is the TTL of intent rows and their marks: the retention plus an hour, so no intent
// expires while its record can still commit.
func (c config) intentTTL() int { return int((c.retention + time.Hour) / time.Second) }
