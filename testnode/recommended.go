package testnode

import (
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
)

// RecommendedSession returns a session on keyspace ks built from cqlsession's recommended
// configuration (with a request timeout a loaded two-core machine meets), for tests and
// benchmarks that measure what users run. It is closed when the test ends.
func RecommendedSession(t testing.TB, ks string) *gocql.Session {
	t.Helper()
	hosts, err := Hosts()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := cqlsession.NewCluster(hosts, cqlsession.WithTimeout(15*time.Second))
	if err != nil {
		t.Fatalf("testnode: %v", err)
	}
	cluster.Keyspace = ks
	cluster.Events.DisableSchemaEvents = true // see ClusterFor
	s := Connect(t, cluster)
	t.Cleanup(s.Close)
	return s
}
