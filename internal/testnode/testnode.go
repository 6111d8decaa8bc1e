// Package testnode gives this module's own tests a real Cassandra without Docker: a
// *gocql.Session on a fresh keyspace, with the schema applied, of the node that CASSANDRA_HOSTS
// names (`make test` starts one and sets it).
//
// It is the Docker-free core of the exported cassandratest module, which users get and which
// also starts a container; that module lives apart so the library's module never requires
// Docker's client. This package stays minimal on purpose: it has no container fallback, and
// names keyspaces from a random UUID alone.
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
	return c
}

// NewSession creates a fresh keyspace, applies the schema to it and returns a session whose
// default keyspace it is, with its name. The keyspace is dropped and the session closed when
// the test ends.
func NewSession(t testing.TB) (*gocql.Session, string) {
	t.Helper()
	id, err := gocql.RandomUUID()
	if err != nil {
		t.Fatalf("testnode: keyspace name: %v", err)
	}
	ks := "t_" + strings.ReplaceAll(id.String(), "-", "")
	cluster := Cluster(t)
	admin := connect(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Schema changes queue up on a busy node; every statement is IF NOT EXISTS, so an attempt
	// that timed out is simply made again. Any other error would only repeat itself.
	for range 3 {
		err = schema.Apply(ctx, admin, schema.WithKeyspace(ks))
		if err == nil || ctx.Err() != nil || !errors.Is(err, gocql.ErrTimeoutNoResponse) {
			break
		}
		t.Logf("testnode: apply schema to %s: %v; trying again", ks, err)
	}
	admin.Close()
	if err != nil {
		t.Fatalf("testnode: apply schema to %s: %v", ks, err)
	}
	cluster.Keyspace = ks
	session := connect(t, cluster)
	t.Cleanup(func() {
		if err := session.Query(`DROP KEYSPACE IF EXISTS ` + ks).Exec(); err != nil {
			t.Logf("testnode: drop keyspace %s: %v", ks, err)
		}
		session.Close()
	})
	return session, ks
}

func connect(t testing.TB, c *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("testnode: connect to %v: %v (is the node up? `make cassandra-up`)", c.Hosts, err)
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
