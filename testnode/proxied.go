package testnode

import (
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/faultproxy"
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
	s := Connect(t, cluster)
	t.Cleanup(s.Close)
	return s
}

// Proxied is a fresh keyspace reached two ways: Direct, and Proxied through Proxy, a fault
// proxy that loses the exchanges a test arms it to lose.
type Proxied struct {
	Direct, Proxied *gocql.Session
	Keyspace        string
	Proxy           *faultproxy.Proxy
}

// NewProxied makes a keyspace as NewSession does and a second session to it through a new
// fault proxy (see ProxiedSession).
func NewProxied(t testing.TB) Proxied {
	t.Helper()
	session, ks := NewSession(t)
	hosts, err := Hosts()
	if err != nil {
		t.Fatal(err)
	}
	p := faultproxy.New(t, hosts[0])
	return Proxied{Direct: session, Proxied: ProxiedSession(t, ks, p.Addr()), Keyspace: ks, Proxy: p}
}
