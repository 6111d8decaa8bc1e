package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/schema"
)

// ConnectError is a cluster that could not be reached; the command exits with code 1.
type ConnectError struct {
	Hosts []string
	Err   error
}

// Error describes the error.
func (e *ConnectError) Error() string {
	// gocql's messages can span lines; the command promises one.
	msg := strings.Join(strings.Fields(e.Err.Error()), " ")
	return fmt.Sprintf("cannot reach Cassandra at %s: %s", strings.Join(e.Hosts, ","), msg)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *ConnectError) Unwrap() error { return e.Err }

// newCluster configures the driver: cqlsession's recommended configuration (no retries, since a
// retried LWT is a second request and the benchmark must count the first one's failure; no
// write coalescing; token-aware routing) with the run's consistencies and timeouts. With
// DriverDefaults it is gocql's own configuration instead, with only those settings and no
// retries, to show what the recommended one saves. It returns a description of the routing
// and the coalescing for the report.
func newCluster(c Config, driverLog io.Writer) (*gocql.ClusterConfig, sessionInfo, error) {
	var (
		cl   *gocql.ClusterConfig
		info sessionInfo
	)
	if c.DriverDefaults {
		cl = gocql.NewCluster(c.Hosts...)
		cl.Consistency, cl.SerialConsistency = c.Consistency, c.Serial
		cl.Timeout, cl.ConnectTimeout = c.RequestTimeout, c.ConnectTimeout
		cl.RetryPolicy = nil
		info = sessionInfo{kind: "gocql defaults", policy: "round-robin"}
	} else {
		var err error
		if cl, err = cqlsession.NewCluster(c.Hosts, c.sessionOptions()...); err != nil {
			return nil, sessionInfo{}, usageErrorf("%v", err)
		}
		info = sessionInfo{kind: "recommended (cqlsession)", policy: "token-aware round-robin"}
		if c.LocalDC != "" {
			info.policy = "token-aware, local DC " + c.LocalDC
		}
	}
	info.coalesce = cl.WriteCoalesceWaitTime
	cl.Logger = log.New(driverLog, "gocql: ", log.LstdFlags)
	return cl, info, nil
}

// sessionInfo describes the driver configuration of a run, for its report.
type sessionInfo struct {
	kind, policy string
	coalesce     time.Duration
}

// sessionOptions are the cqlsession options of the run's flags.
func (c Config) sessionOptions() []cqlsession.Option {
	opts := []cqlsession.Option{cqlsession.WithConsistency(c.Consistency), cqlsession.WithSerialConsistency(c.Serial),
		cqlsession.WithTimeout(c.RequestTimeout), cqlsession.WithConnectTimeout(c.ConnectTimeout)}
	if c.LocalDC != "" {
		opts = append(opts, cqlsession.WithLocalDC(c.LocalDC))
	}
	return opts
}

func connect(cl *gocql.ClusterConfig) (*gocql.Session, error) {
	s, err := cl.CreateSession()
	if err != nil {
		return nil, &ConnectError{Hosts: cl.Hosts, Err: err}
	}
	return s, nil
}

// newRunID returns a name unique to this run, usable in a keyspace name.
func newRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}

// keyspaceExists tells whether name is already a keyspace, so the run never drops one it did
// not create.
func keyspaceExists(ctx context.Context, s *gocql.Session, name string) (bool, error) {
	var n int
	err := s.Query(`SELECT COUNT(*) FROM system_schema.keyspaces WHERE keyspace_name = ?`, name).
		WithContext(ctx).Scan(&n)
	return n > 0, err
}

// prepareKeyspace applies the schema and returns the function that removes the keyspace again,
// or a no-op when it must stay. If applying fails half-way, what it created is removed.
func prepareKeyspace(ctx context.Context, s *gocql.Session, c Config, name string) (drop func() error, kept bool, err error) {
	quoted, err := schema.QuoteIdentifier(name)
	if err != nil {
		return nil, false, err
	}
	existed, err := keyspaceExists(ctx, s, name)
	if err != nil {
		return nil, false, fmt.Errorf("check keyspace %s: %w", name, err)
	}
	drop = func() error { return nil }
	kept = existed || c.KeepKeyspace
	if !kept {
		drop = func() error {
			// Its own deadline: the run's context may already be cancelled (Ctrl-C).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return s.Query(`DROP KEYSPACE IF EXISTS ` + quoted).WithContext(ctx).Exec()
		}
	}
	if err := schema.Apply(ctx, s, schema.WithKeyspace(name), schema.WithReplication(c.replication())); err != nil {
		if dropErr := drop(); dropErr != nil {
			err = fmt.Errorf("%w (and dropping %s failed: %v)", err, name, dropErr)
		}
		return nil, false, err
	}
	return drop, kept, nil
}
