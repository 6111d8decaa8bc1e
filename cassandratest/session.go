package cassandratest

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/testnode"
)

// Cluster returns a cluster configuration for the test node: QUORUM and SERIAL, timeouts that
// a loaded two-core machine meets, and no driver retries (an LWT must never be re-sent by the
// driver). It fails the test when no node can be found.
func Cluster(t testing.TB) *gocql.ClusterConfig {
	t.Helper()
	return testnode.ClusterFor(nodeHosts(t)...)
}

// NewSession creates a keyspace named after the test with a random suffix, applies the schema
// to it and returns a session whose default keyspace it is, with the keyspace's name. The
// keyspace is dropped and the session closed when the test ends.
func NewSession(t testing.TB) (*gocql.Session, string) {
	t.Helper()
	return testnode.SessionIn(t, keyspaceName(t.Name()), nodeHosts(t)...)
}

func nodeHosts(t testing.TB) []string {
	t.Helper()
	hosts, err := Hosts()
	if err != nil {
		t.Fatalf("cassandratest: %v", err)
	}
	return hosts
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
