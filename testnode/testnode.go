// Package testnode gives tests a real Cassandra without Docker: a
// *gocql.Session on a fresh keyspace, with the schema applied, of the node that CASSANDRA_HOSTS
// names (`make test` starts one and sets it).
//
// It is the Docker-free core of the exported cassandratest module, which users get and which
// also starts a container; that module lives apart so the library's module never requires
// Docker's client. This package stays minimal on purpose: it has no container fallback, and
// names keyspaces from a random UUID alone. It sits outside internal/ because it imports the
// library (schema, cqlsession) and internal/ holds leaves only; users' tests should prefer
// cassandratest.
//
// With no CASSANDRA_HOSTS it fails the test, naming `make cassandra-up`; it never skips.
// Everything in it is safe for use from parallel tests.
package testnode

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

var errNoHosts = errors.New("testnode: CASSANDRA_HOSTS is unset; run `make cassandra-up` and set " +
	"CASSANDRA_HOSTS=127.0.0.1:9042 (make test does both)")

// Hosts returns the contact points listed in CASSANDRA_HOSTS (comma-separated host[:port]).
func Hosts() ([]string, error) {
	var hosts []string
	for _, h := range strings.Split(os.Getenv("CASSANDRA_HOSTS"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil, errNoHosts
	}
	return hosts, nil
}

// Cluster returns a cluster configuration for the test node: QUORUM and SERIAL, timeouts that
// a loaded two-core machine meets, and no driver retries (the driver must never re-send an
// LWT). It fails the test when no node is configured.
func Cluster(t testing.TB) *gocql.ClusterConfig {
	t.Helper()
	hosts, err := Hosts()
	if err != nil {
		t.Fatal(err)
	}
	return ClusterFor(hosts...)
}

// AdminCluster is Cluster for a session that makes schema changes, which wait on every table of
// the node's schema: its requests time out after a minute rather than Cluster's 15 seconds.
func AdminCluster(t testing.TB) *gocql.ClusterConfig {
	t.Helper()
	c := Cluster(t)
	c.Timeout = time.Minute
	return c
}

// ClusterFor is Cluster for given contact points, for tests that run nodes of their own: QUORUM
// and SERIAL, timeouts a loaded two-core machine meets, no driver retries.
func ClusterFor(hosts ...string) *gocql.ClusterConfig {
	c := gocql.NewCluster(hosts...)
	c.Consistency = gocql.Quorum
	c.SerialConsistency = gocql.Serial
	c.Timeout = 15 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.RetryPolicy = nil
	c.DisableInitialHostLookup = len(hosts) == 1 // one node has no peers worth looking up
	// Tests make and drop keyspaces all the time, and every session hears of each change: its
	// handler (which waits for schema agreement) can outlive the session's Close and fail a
	// leak check. No test reads the driver's schema metadata, so sessions go without the events.
	c.Events.DisableSchemaEvents = true
	return c
}

// NewSession creates a fresh keyspace, applies the schema to it and returns a session whose
// default keyspace it is, with its name. The keyspace is dropped and the session closed when
// the test ends.
func NewSession(t testing.TB) (*gocql.Session, string) {
	t.Helper()
	hosts, err := Hosts()
	if err != nil {
		t.Fatal(err)
	}
	id, err := gocql.RandomUUID()
	if err != nil {
		t.Fatalf("testnode: keyspace name: %v", err)
	}
	return SessionIn(t, "t_"+strings.ReplaceAll(id.String(), "-", ""), hosts...)
}

// SessionIn is NewSession on the node at hosts, in the keyspace ks (created, and dropped when
// the test ends): the one implementation behind this package and the exported cassandratest.
func SessionIn(t testing.TB, ks string, hosts ...string) (*gocql.Session, string) {
	t.Helper()
	adminCluster := ClusterFor(hosts...)
	adminCluster.Timeout = time.Minute
	admin := Connect(t, adminCluster)
	if err := Migrate(t, admin, schema.WithKeyspace(ks)); err != nil {
		admin.Close()
		t.Fatalf("apply schema to %s: %v", ks, err)
	}
	cluster := ClusterFor(hosts...)
	cluster.Keyspace = ks
	session := Connect(t, cluster)
	t.Cleanup(func() {
		session.Close()
		// A keyspace left behind slows every later schema change on the node.
		drop := `DROP KEYSPACE IF EXISTS "` + ks + `"`
		if err := retrySchema(t, drop, func(ctx context.Context) error { return admin.Query(drop).WithContext(ctx).Exec() }); err != nil {
			t.Logf("drop keyspace %s: %v", ks, err)
		}
		admin.Close()
	})
	return session, ks
}

// Migrate runs schema.Migrate, trying again after a timeout (see retrySchema), and returns its
// error.
func Migrate(t testing.TB, session *gocql.Session, opts ...schema.Option) error {
	t.Helper()
	return retrySchema(t, "migrate", func(ctx context.Context) error {
		_, err := schema.Migrate(ctx, session, opts...)
		return err
	})
}

// SchemaChange runs an idempotent schema statement (DROP TABLE IF EXISTS, ...) and waits for
// schema agreement, trying again after a timeout (see retrySchema); it fails t on any other
// error.
func SchemaChange(t testing.TB, session *gocql.Session, stmt string) {
	t.Helper()
	err := retrySchema(t, stmt, func(ctx context.Context) error {
		if err := session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return err
		}
		return session.AwaitSchemaAgreement(ctx)
	})
	if err != nil {
		t.Fatalf("testnode: %s: %v", stmt, err)
	}
}

// retrySchema makes attempt up to three times within three minutes while it times out. Schema
// changes queue up on a busy node; every schema statement the tests make is idempotent, so an
// attempt that timed out is simply made again. Any other error would only repeat itself.
func retrySchema(t testing.TB, what string, attempt func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	for range 3 {
		err = attempt(ctx)
		if err == nil || ctx.Err() != nil || !errors.Is(err, gocql.ErrTimeoutNoResponse) {
			return err
		}
		t.Logf("%s: %v; trying again", what, err)
	}
	return err
}

// Connect opens a session of c, or fails the test naming the remedy.
func Connect(t testing.TB, c *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connect to %v: %v (is the node up? `make cassandra-up`)", c.Hosts, err)
	}
	return s
}

// KafkaBrokers returns the brokers listed in KAFKA_BROKERS (comma-separated host:port), for the
// tests that need a real Kafka; with none it fails the test, naming the remedy.
func KafkaBrokers(t testing.TB) []string {
	t.Helper()
	b := os.Getenv("KAFKA_BROKERS")
	if b == "" {
		t.Fatal("testnode: no Kafka: KAFKA_BROKERS is unset; run `make kafka-up` and set KAFKA_BROKERS=127.0.0.1:19092 (make test does both)")
	}
	return strings.Split(b, ",")
}
