package cqlsession

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// ErrInvalidOption matches every error NewCluster returns for a setting it refuses.
var ErrInvalidOption = errors.New("cqlsession: invalid option")

// The timeouts NewCluster sets unless told otherwise.
const (
	// DefaultTimeout bounds one request. It is longer than the coordinator's own timeouts
	// (Cassandra's defaults: 1 s for Paxos contention, 2 s for writes, 5 s for reads), so a
	// slow request ends with the server's typed timeout, which says what it was, rather than the
	// driver's, which says nothing.
	DefaultTimeout = 10 * time.Second
	// DefaultConnectTimeout bounds the dial and handshake of one connection: an unreachable
	// node is given up on quickly, so the session starts with the nodes that answer.
	DefaultConnectTimeout = 5 * time.Second
)

// Option configures NewCluster.
type Option func(*settings) error

type settings struct {
	localDC        string
	consistency    gocql.Consistency
	serial         gocql.SerialConsistency
	consistencySet bool
	serialSet      bool
	timeout        time.Duration
	connectTimeout time.Duration
}

// WithLocalDC names the datacentre the service runs in. Requests go to its nodes, token-aware
// (a replica of the partition first), and the consistencies default to LOCAL_QUORUM and
// LOCAL_SERIAL. With a local consistency the session connects to that datacentre's nodes
// only: a LOCAL_SERIAL round coordinated elsewhere would not serialise with this one's, and a
// LOCAL_QUORUM read there would not see this datacentre's writes. With SERIAL and a non-local
// consistency (WithSerialConsistency, WithConsistency) other datacentres' nodes remain a
// fallback.
//
// Without it, requests are token-aware over every node the driver finds, in any datacentre,
// and the consistencies default to QUORUM and SERIAL: right for one datacentre, and correct but
// slower (a quorum of every replica, in every datacentre) for several.
func WithLocalDC(dc string) Option {
	return func(s *settings) error {
		if strings.TrimSpace(dc) == "" {
			return fmt.Errorf("%w: empty local datacentre", ErrInvalidOption)
		}
		s.localDC = dc
		return nil
	}
}

// WithConsistency sets the session's default consistency, for the reads and plain writes that
// do not choose their own. Default QUORUM, or LOCAL_QUORUM with WithLocalDC. ANY is refused
// (nothing written at ANY can be read back), and so are the LOCAL_ levels without WithLocalDC.
func WithConsistency(c gocql.Consistency) Option {
	return func(s *settings) error {
		switch c {
		case gocql.One, gocql.Two, gocql.Three, gocql.Quorum, gocql.All, gocql.LocalQuorum, gocql.EachQuorum, gocql.LocalOne:
		default:
			return fmt.Errorf("%w: consistency %v", ErrInvalidOption, c)
		}
		s.consistency, s.consistencySet = c, true
		return nil
	}
}

// WithSerialConsistency sets the consistency of the Paxos phase of conditional writes and of
// serial reads: SERIAL (default) or LOCAL_SERIAL (default with WithLocalDC, which it requires).
func WithSerialConsistency(c gocql.SerialConsistency) Option {
	return func(s *settings) error {
		if c != gocql.Serial && c != gocql.LocalSerial {
			return fmt.Errorf("%w: serial consistency %v must be SERIAL or LOCAL_SERIAL", ErrInvalidOption, c)
		}
		s.serial, s.serialSet = c, true
		return nil
	}
}

// WithTimeout sets the per-request timeout. Default DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("%w: timeout %v must be positive", ErrInvalidOption, d)
		}
		s.timeout = d
		return nil
	}
}

// WithConnectTimeout sets the timeout of a connection's dial and handshake. Default
// DefaultConnectTimeout.
func WithConnectTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("%w: connect timeout %v must be positive", ErrInvalidOption, d)
		}
		s.connectTimeout = d
		return nil
	}
}

// Consistencies returns the consistencies NewCluster chooses when none is given: QUORUM and
// SERIAL, or LOCAL_QUORUM and LOCAL_SERIAL when localDC is set.
func Consistencies(localDC string) (gocql.Consistency, gocql.SerialConsistency) {
	if localDC != "" {
		return gocql.LocalQuorum, gocql.LocalSerial
	}
	return gocql.Quorum, gocql.Serial
}

// NewCluster returns the recommended cluster configuration for hosts (contact points, host or
// host:port): write coalescing off, token-aware routing (over DC-aware round-robin with
// WithLocalDC), the consistencies of the options, no driver retries and non-idempotent
// queries, and the timeouts of the options. Errors match ErrInvalidOption.
func NewCluster(hosts []string, opts ...Option) (*gocql.ClusterConfig, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: no hosts", ErrInvalidOption)
	}
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	c := gocql.NewCluster(hosts...)
	c.Consistency, c.SerialConsistency = s.consistency, s.serial
	c.Timeout, c.ConnectTimeout = s.timeout, s.connectTimeout
	// Frames are written as soon as they are ready: a service waits for every answer, so a
	// coalescing wait is latency on every request.
	c.WriteCoalesceWaitTime = 0
	// The driver never re-sends a request: a retried conditional write whose first attempt
	// applied would report "not applied" against its own row. The stores resolve unknown
	// outcomes with a serial read instead.
	c.RetryPolicy = nil
	c.DefaultIdempotence = false
	fallback := gocql.RoundRobinHostPolicy()
	if s.localDC != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(s.localDC)
		if isLocal(s.serial, s.consistency) {
			c.HostFilter = gocql.DataCentreHostFilter(s.localDC)
		}
	}
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(fallback)
	return c, nil
}

// newSettings applies opts to the defaults and checks what no single option can.
func newSettings(opts []Option) (settings, error) {
	s := settings{timeout: DefaultTimeout, connectTimeout: DefaultConnectTimeout}
	for _, o := range opts {
		if o == nil {
			return s, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		if err := o(&s); err != nil {
			return s, err
		}
	}
	cl, serial := Consistencies(s.localDC)
	if !s.consistencySet {
		s.consistency = cl
	}
	if !s.serialSet {
		s.serial = serial
	}
	if s.localDC == "" && isLocal(s.serial, s.consistency) {
		return s, fmt.Errorf("%w: %v and %v: a local consistency needs WithLocalDC, or each request's datacentre decides what it means", ErrInvalidOption, s.consistency, s.serial)
	}
	return s, nil
}

// isLocal reports whether either consistency is scoped to the coordinator's datacentre.
func isLocal(serial gocql.SerialConsistency, cl gocql.Consistency) bool {
	return serial == gocql.LocalSerial || cl == gocql.LocalQuorum || cl == gocql.LocalOne
}
