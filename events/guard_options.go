package events

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// GuardOption configures a Guard. Options are validated by NewGuard.
type GuardOption func(*guardConfig)

type guardConfig struct {
	keyspace, table, byScope string
	retention, lease         time.Duration
	maxAttempts, maxPayload  int
	consistency              gocql.Consistency
	serial                   gocql.SerialConsistency
	now                      func() time.Time
}

// Defaults of the guard's options.
const (
	DefaultGuardRetention = 7 * 24 * time.Hour // longer than brokers usually redeliver
	DefaultGuardLease     = 30 * time.Second
	DefaultMaxAttempts    = 5
	DefaultMaxPayload     = 4 << 20 // larger than common brokers' message size limits
)

func defaultGuardConfig() guardConfig {
	return guardConfig{
		keyspace: schema.DefaultKeyspace, table: "processed_messages", byScope: "processed_messages_by_scope",
		retention: DefaultGuardRetention, lease: DefaultGuardLease,
		maxAttempts: DefaultMaxAttempts, maxPayload: DefaultMaxPayload,
		consistency: gocql.Quorum, serial: gocql.Serial, now: time.Now,
	}
}

// WithGuardKeyspace names the keyspace of the guard's tables (default "cassdedup").
func WithGuardKeyspace(name string) GuardOption { return func(c *guardConfig) { c.keyspace = name } }

// WithGuardTables names the record table and the by-scope index (defaults
// "processed_messages", "processed_messages_by_scope").
func WithGuardTables(records, byScope string) GuardOption {
	return func(c *guardConfig) { c.table, c.byScope = records, byScope }
}

// WithGuardRetention sets how long a processed message is remembered (default 7 days; 1 min to 90
// days). A redelivery after it runs the handler again, so keep it longer than the broker can
// redeliver.
func WithGuardRetention(d time.Duration) GuardOption { return func(c *guardConfig) { c.retention = d } }

// WithGuardLease sets how long a claim lives without renewal (default 30 s; 100 ms up to the
// retention). It is renewed while the handler runs; a consumer that dies holding it delays
// redelivered copies by at most the lease.
func WithGuardLease(d time.Duration) GuardOption { return func(c *guardConfig) { c.lease = d } }

// WithMaxAttempts sets how many handler runs a message gets (default 5; 1 to 1000). When a run
// fails and it was the last, or a delivery finds the attempts used up (a consumer crashed in
// the handler each time), the message is reported as Poison from then on.
func WithMaxAttempts(n int) GuardOption { return func(c *guardConfig) { c.maxAttempts = n } }

// WithMaxPayload sets the largest payload accepted (default 4 MiB; 1 byte to 256 MiB). The
// payload is only hashed, to detect two messages sharing an id.
func WithMaxPayload(n int) GuardOption { return func(c *guardConfig) { c.maxPayload = n } }

// WithGuardConsistency sets the consistency of the by-scope index and of Paxos commits
// (default QUORUM; LOCAL_QUORUM with LOCAL_SERIAL in one datacenter).
func WithGuardConsistency(cl gocql.Consistency) GuardOption {
	return func(c *guardConfig) { c.consistency = cl }
}

// WithGuardSerialConsistency sets the Paxos consistency of claims (default SERIAL).
func WithGuardSerialConsistency(sc gocql.SerialConsistency) GuardOption {
	return func(c *guardConfig) { c.serial = sc }
}

// WithGuardClock replaces time.Now for the hour buckets of the by-scope index, for tests.
func WithGuardClock(now func() time.Time) GuardOption { return func(c *guardConfig) { c.now = now } }

func (c *guardConfig) validate() error {
	switch {
	case c.retention < time.Minute || c.retention > 90*24*time.Hour:
		return fmt.Errorf("%w: retention %v must be 1m..90d", ErrInvalidOption, c.retention)
	case c.lease < 100*time.Millisecond || c.lease > c.retention:
		return fmt.Errorf("%w: lease %v must be 100ms..retention", ErrInvalidOption, c.lease)
	case c.maxAttempts < 1 || c.maxAttempts > 1000:
		return fmt.Errorf("%w: max attempts %d must be 1..1000", ErrInvalidOption, c.maxAttempts)
	case c.maxPayload < 1 || c.maxPayload > 256<<20:
		return fmt.Errorf("%w: max payload %d must be 1..256 MiB", ErrInvalidOption, c.maxPayload)
	case c.now == nil:
		return fmt.Errorf("%w: nil clock", ErrInvalidOption)
	}
	return nil
}
