package cqlsession

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
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

// Option configures NewCluster. A bad one makes NewCluster fail with an error that names it.
type Option func(*settings) error

// set is an option that applies apply, or refuses, named by call, when bad.
func set(bad bool, call, why string, apply func(*settings)) Option {
	return optcheck.Set(ErrInvalidOption, bad, call, why, apply)
}

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
	return set(strings.TrimSpace(dc) == "", optcheck.Call("WithLocalDC", dc), "no datacentre", func(s *settings) { s.localDC = dc })
}

// WithConsistency sets the session's default consistency, for the reads and plain writes that
// do not choose their own. Default QUORUM, or LOCAL_QUORUM with WithLocalDC. ANY is refused
// (nothing written at ANY can be read back), and so are the LOCAL_ levels without WithLocalDC.
func WithConsistency(c gocql.Consistency) Option {
	switch c {
	case gocql.One, gocql.Two, gocql.Three, gocql.Quorum, gocql.All, gocql.LocalQuorum, gocql.EachQuorum, gocql.LocalOne:
		return set(false, "", "", func(s *settings) { s.consistency, s.consistencySet = c, true })
	}
	return set(true, optcheck.Call("WithConsistency", c), "nothing written at it can be read back", nil)
}

// WithSerialConsistency sets the consistency of the Paxos phase of conditional writes and of
// serial reads: SERIAL (default) or LOCAL_SERIAL (default with WithLocalDC, which it requires).
func WithSerialConsistency(c gocql.SerialConsistency) Option {
	return set(c != gocql.Serial && c != gocql.LocalSerial, optcheck.Call("WithSerialConsistency", c),
		"must be SERIAL or LOCAL_SERIAL", func(s *settings) { s.serial, s.serialSet = c, true })
}

// WithTimeout sets the per-request timeout. Default DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return set(d <= 0, optcheck.Call("WithTimeout", d), "must be positive", func(s *settings) { s.timeout = d })
}

// WithConnectTimeout sets the timeout of a connection's dial and handshake. Default
// DefaultConnectTimeout.
func WithConnectTimeout(d time.Duration) Option {
	return set(d <= 0, optcheck.Call("WithConnectTimeout", d), "must be positive", func(s *settings) { s.connectTimeout = d })
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
	if err := optcheck.Apply(ErrInvalidOption, &s, opts); err != nil {
		return s, err
	}
	cl, serial := Consistencies(s.localDC)
	if !s.consistencySet {
		s.consistency = cl
	}
	if !s.serialSet {
		s.serial = serial
	}
	if s.localDC == "" && isLocal(s.serial, s.consistency) {
		return s, optcheck.Bad(ErrInvalidOption, fmt.Sprintf("WithConsistency(%v) with WithSerialConsistency(%v)", s.consistency, s.serial),
			"a local consistency needs WithLocalDC, or each request's datacentre decides what it means")
	}
	return s, nil
}

// isLocal reports whether either consistency is scoped to the coordinator's datacentre.
func isLocal(serial gocql.SerialConsistency, cl gocql.Consistency) bool {
	return serial == gocql.LocalSerial || cl == gocql.LocalQuorum || cl == gocql.LocalOne
}
