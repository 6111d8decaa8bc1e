package cassandratest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// Cluster returns a cluster configuration for the test node: QUORUM, a timeout generous
// enough for a loaded two-core machine, and no driver retries (an LWT must never be re-sent by
// the driver). It fails the test when no node can be found.
func Cluster(t testing.TB) *gocql.ClusterConfig {
	t.Helper()
	hosts, err := Hosts()
	if err != nil {
		t.Fatalf("cassandratest: %v", err)
	}
	c := gocql.NewCluster(hosts...)
	c.Consistency = gocql.Quorum
	c.SerialConsistency = gocql.Serial
	c.Timeout = 15 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.RetryPolicy = nil
	// One node: looking up peers only slows the start and cannot add contact points.
	c.DisableInitialHostLookup = len(hosts) == 1
	return c
}

// NewSession creates a keyspace named after the test with a random suffix, applies the schema
// to it and returns a session whose default keyspace it is, with the keyspace's name. The
// keyspace is dropped and the session closed when the test ends.
func NewSession(t testing.TB) (*gocql.Session, string) {
	t.Helper()
	ks := keyspaceName(t.Name())
	admin := connect(t, Cluster(t))
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := schema.Apply(ctx, admin, schema.WithKeyspace(ks)); err != nil {
		t.Fatalf("cassandratest: apply schema to %s: %v", ks, err)
	}
	cluster := Cluster(t)
	cluster.Keyspace = ks
	session := connect(t, cluster)
	t.Cleanup(func() {
		// Dropped through the test's own session: the keyspace exists until this statement.
		if err := session.Query(`DROP KEYSPACE IF EXISTS "` + ks + `"`).Exec(); err != nil {
			t.Logf("cassandratest: drop keyspace %s: %v", ks, err)
		}
		session.Close()
	})
	return session, ks
}

func connect(t testing.TB, c *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("cassandratest: connect to %v: %v (is the node up? `make cassandra-up`)", c.Hosts, err)
	}
	return s
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// keyspaceName derives a valid, unique keyspace name: "t_" + the test name's words, cut so the
// random suffix fits in Cassandra's 48-character limit.
func keyspaceName(testName string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	base := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(testName), "_"), "_")
	if len(base) > 32 {
		base = base[:32]
	}
	return "t_" + base + "_" + hex.EncodeToString(b[:])
}
