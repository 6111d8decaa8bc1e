package testnode

import (
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// ProxiedSession returns a second session on keyspace ks that reaches the node only through
// addr (a fault proxy), with one connection and a 2s client timeout, so a lost response turns
// into a driver timeout quickly. It is closed when the test ends.
func ProxiedSession(t testing.TB, ks, addr string) *gocql.Session {
	t.Helper()
	cluster := Cluster(t)
	cluster.Hosts = []string{addr}
	cluster.DisableInitialHostLookup = true
	cluster.Keyspace = ks
	cluster.Timeout = 2 * time.Second
	cluster.NumConns = 1
	s := connect(t, cluster)
	t.Cleanup(s.Close)
	return s
}
