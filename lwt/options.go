package lwt

import (
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// Defaults of the store's options.
const (
	DefaultRetention     = 24 * time.Hour   // how long a key is remembered
	DefaultLease         = 30 * time.Second // how long a claim lives without renewal
	DefaultMaxResultSize = 256 << 10        // bytes; large blobs make Paxos rounds slow
	MaxResultSizeLimit   = 8 << 20          // half of Cassandra's default max mutation size
	DefaultMaxKeyLength  = 255              // bytes per string key value, as common APIs allow
	DefaultCommitTimeout = 10 * time.Second // how long storing a result may take after ctx ended
)

// Option configures a Store and a BatchStore alike (the retention, the lease, the
// consistencies, the sizes, the commit timeout, the observer and the clock): NewStore and
// NewBatchStore both accept it. A bad one makes the constructor fail with an error that names
// it and matches ErrInvalidOption.
type Option func(*config) error

// StoreOnlyOption configures a Store alone (its cache, its ownership of scopes, the recorder of
// its fast path): NewStore accepts it, and passing it to NewBatchStore does not compile.
type StoreOnlyOption func(*config) error

// StoreOption is what NewStore accepts: an Option or a StoreOnlyOption.
type StoreOption interface{ storeOption() Option }

func (o Option) storeOption() Option          { return o }
func (o StoreOnlyOption) storeOption() Option { return Option(o) }

type config struct {
	retention     time.Duration
	lease         time.Duration
	serial        gocql.SerialConsistency
	commit        gocql.Consistency
	maxResult     int
	maxKey        int
	cacheSize     int
	commitTimeout time.Duration
	observer      Observer
	now           func() time.Time
	clockSet      bool // WithClock replaced time.Now
	recorder      Recorder
	ownerLease    time.Duration
	ownerMargin   time.Duration
	ownerSettle   time.Duration // the cluster's write_request_timeout, waited out after acquiring
	ownersTable   string
}

// newConfig applies opts to the defaults and checks what no single option can: the lease may
// not exceed the retention.
func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	if cfg.lease > cfg.retention {
		return cfg, invalidOption("WithLease", "%v exceeds the retention (WithRetention) %v", cfg.lease, cfg.retention)
	}
	return cfg, nil
}

// invalidOption is the error of the option named name given a bad value: it names the option
// and wraps ErrInvalidOption, as every option of this package's constructors does.
func invalidOption(name, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidOption, name, fmt.Sprintf(format, args...))
}

func defaultConfig() config {
	return config{
		retention:     DefaultRetention,
		lease:         DefaultLease,
		serial:        gocql.Serial,
		commit:        gocql.Quorum,
		maxResult:     DefaultMaxResultSize,
		maxKey:        DefaultMaxKeyLength,
		commitTimeout: DefaultCommitTimeout,
		now:           time.Now,
		ownerLease:    DefaultOwnerLease,
		ownerMargin:   DefaultOwnerMargin,
		ownerSettle:   DefaultWriteRequestTimeout,
		ownersTable:   "scope_owners",
	}
}

// WithRetention sets how long a record, and so the replay of its result, lives: every cell of
// the record is written with a TTL that ends at the same instant. Default 24h; at least 1s
// (Cassandra's TTL resolution). Within the window a repeated key replays; after it the key
// runs again.
func WithRetention(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second || d > 20*365*24*time.Hour {
			return invalidOption("WithRetention", "%v is not between 1s and 20 years", d)
		}
		c.retention = d
		return nil
	}
}

// WithLease sets how long a claim is held without renewal; the executor renews it every third
// of the lease while the function runs. The lease is written as cells with their own TTL (the
// lease in whole seconds, rounded up, plus one, since Cassandra starts a TTL from the current
// whole second), so it ends when Cassandra's clock says so, whatever the callers' clocks say: a
// claim is taken over only after the server expired its lease, more than the lease rounded up
// to whole seconds and at most one second more after the last renewal (a lease of 1.5s ends
// between 2s and 3s after it; one of 2s, between 2s and 3s). Default 30s; at least 1s
// (Cassandra's TTL resolution) and not more than the retention.
func WithLease(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Second {
			return invalidOption("WithLease", "%v is less than 1s", d)
		}
		c.lease = d
		return nil
	}
}

// WithSerialConsistency sets the Paxos consistency of every conditional write and serial read:
// gocql.Serial (default; linearizable across datacenters) or gocql.LocalSerial (one
// datacenter's quorum; use it only when each key is written from one datacenter).
func WithSerialConsistency(sc gocql.SerialConsistency) Option {
	return func(c *config) error {
		if sc != gocql.Serial && sc != gocql.LocalSerial {
			return invalidOption("WithSerialConsistency", "%v is not SERIAL or LOCAL_SERIAL", sc)
		}
		c.serial = sc
		return nil
	}
}

// WithConsistency sets the consistency of the Paxos commit phase and of plain writes:
// gocql.Quorum (default), gocql.LocalQuorum (with LOCAL_SERIAL in one datacenter),
// gocql.EachQuorum or gocql.All.
func WithConsistency(cl gocql.Consistency) Option {
	return func(c *config) error {
		switch cl {
		case gocql.Quorum, gocql.LocalQuorum, gocql.EachQuorum, gocql.All:
			c.commit = cl
			return nil
		}
		return invalidOption("WithConsistency", "%v is not QUORUM, LOCAL_QUORUM, EACH_QUORUM or ALL", cl)
	}
}

// WithMaxResultSize sets the largest result, in bytes, that may be stored; a larger one gives
// ErrResultTooLarge instead of a failed mutation. Default 256 KiB, at most 8 MiB.
func WithMaxResultSize(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxResultSizeLimit {
			return invalidOption("WithMaxResultSize", "%d is not between 1 and %d bytes", n, MaxResultSizeLimit)
		}
		c.maxResult = n
		return nil
	}
}

// WithMaxKeyLength sets the longest string key value in bytes. Default 255, at most 4096.
func WithMaxKeyLength(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 4096 {
			return invalidOption("WithMaxKeyLength", "%d is not between 1 and 4096 bytes", n)
		}
		c.maxKey = n
		return nil
	}
}

// WithCache keeps up to n COMPLETED records in memory, each until its record expires, so a
// duplicate in this process is answered without a round trip. A completed result never
// changes, so the cache cannot serve a stale answer; nothing else is cached. The cache is
// consulted before ExecuteOnce allocates anything: a hit without CallOptions allocates nothing
// (BenchmarkExecuteOnce/duplicate-from-cache). A full cache makes room by evicting a record
// that was not hit since the last eviction looked at it (second chance). Default off (0).
func WithCache(n int) StoreOnlyOption {
	return func(c *config) error {
		if n < 0 {
			return invalidOption("WithCache", "size %d is negative", n)
		}
		c.cacheSize = n
		return nil
	}
}

// WithCommitTimeout bounds how long storing a result (or releasing a claim) may take once the
// function has returned. That write runs even if the caller's ctx has ended, so that work done
// is not lost: while the budget lasts, a write whose outcome is unknown is read back at the
// serial consistency and sent again, with backoff, and the lease is kept renewed. Default 10s.
func WithCommitTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalidOption("WithCommitTimeout", "%v is not positive", d)
		}
		c.commitTimeout = d
		return nil
	}
}

// WithObserver sets a hook called synchronously on every LWT and state transition. It must be
// fast and safe for concurrent use. Default none.
func WithObserver(o Observer) Option {
	return func(c *config) error {
		c.observer = o
		return nil
	}
}

// WithClock replaces time.Now for every judgement the store makes from time: leases, record
// expiry and the cache. For tests and simulations; the clock must be safe for concurrent use.
// Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return invalidOption("WithClock", "nil clock")
		}
		c.now, c.clockSet = now, true
		return nil
	}
}

// DefaultOwnerLease and DefaultOwnerMargin are the fast path's ownership lease (see
// WithOwnership): the server keeps an owner's lease cell this long after each renewal, and the
// owner stops admitting on the fast path this much earlier by its own monotonic clock.
// MinOwnerMargin and MaxOwnerLease bound them: the margin covers Cassandra's one-second TTL
// resolution; the lease may not outlive the scope_owners row that a renewal every third of it
// rewrites (the table's TTL, 7 days), and so stays far below Cassandra's TTL limit (20 years),
// which would refuse the lease cell at Own.
const (
	DefaultOwnerLease  = 10 * time.Second
	DefaultOwnerMargin = 3 * time.Second
	MinOwnerMargin     = 1500 * time.Millisecond
	MaxOwnerLease      = 7 * 24 * time.Hour
)

// WithOwnership sets the lease by which Own holds a scope on the server (a cell of the
// scope_owners table with a TTL of lease, in whole seconds, renewed every third of it) and the
// margin by which the owner's fast path stops before the server could expire that cell: an
// owner admits on the fast path only until its last successful renewal's send time plus lease
// minus margin. The margin must cover Cassandra's one-second TTL resolution, the drift of the
// two clocks over a lease, and the longest pause between a fast-path record's ownership check
// and that write's arrival at the replicas (docs/fastpath.md). Defaults 10s and 3s; margin at
// least 1.5s, lease a whole number of seconds, at least twice the margin and at most
// MaxOwnerLease (OwnershipProblem).
func WithOwnership(lease, margin time.Duration) StoreOnlyOption {
	return func(c *config) error {
		if p := OwnershipProblem(lease, margin); p != "" {
			return fmt.Errorf("%w: WithOwnership(%v, %v): %s", ErrInvalidOption, lease, margin, p)
		}
		c.ownerLease, c.ownerMargin = lease, margin
		return nil
	}
}

// DefaultWriteRequestTimeout is Cassandra's default write_request_timeout (cassandra.yaml, 5.0):
// how long a node keeps a write it has not applied before it drops it. MaxWriteRequestTimeout is
// the longest WithWriteRequestTimeout takes: every Own waits it out.
const (
	DefaultWriteRequestTimeout = 2 * time.Second
	MaxWriteRequestTimeout     = time.Minute
)

// WithWriteRequestTimeout tells the ownership the cluster's write_request_timeout. Own waits
// this long after it acquired a scope's lease and before its warm-up reads: a record write the
// previous owner sent before its deadline, still on its way to a replica when the lease passed,
// is then applied (and read by the warm-up) or dropped by the replica, which holds a write at
// most this long after its coordinator received it (with internode_timeout: true, Cassandra
// 5.0's default). Set it to the cluster's value where that was raised: a shorter wait lets such
// a write land after the warm-up read the table, and its message run again on the new owner.
// Default 2s, Cassandra's default; more than 0 and at most MaxWriteRequestTimeout
// (WriteRequestTimeoutProblem). It adds to every Own.
func WithWriteRequestTimeout(d time.Duration) StoreOnlyOption {
	return func(c *config) error {
		if p := WriteRequestTimeoutProblem(d); p != "" {
			return fmt.Errorf("%w: WithWriteRequestTimeout(%v): %s", ErrInvalidOption, d, p)
		}
		c.ownerSettle = d
		return nil
	}
}

// WithOwnersTable names the table, in the record table's keyspace, where Own records who owns a
// scope (schema/cql/018_scope_owners.cql). Default scope_owners.
func WithOwnersTable(name string) StoreOnlyOption {
	return func(c *config) error {
		if _, err := schema.QuoteIdentifier(name); err != nil {
			return fmt.Errorf("%w: WithOwnersTable(%q): %w", ErrInvalidOption, name, err)
		}
		c.ownersTable = name
		return nil
	}
}
