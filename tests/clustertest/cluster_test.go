//go:build cluster

package clustertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
)

// script is cluster.sh, relative to this package's folder (where go test runs).
const script = "../../scripts/cluster/cluster.sh"

// node is one node of the cluster as cluster.sh topology prints it.
type node struct {
	n    int
	addr string
	dc   string
}

// cluster drives cluster.sh for one test. The settings it reads (CLUSTER_PREFIX and the rest)
// come from the environment, the same as make's.
type cluster struct {
	t     *testing.T
	nodes []node
}

// newCluster checks that the cluster is there and learns its topology. The tests expect
// three nodes in two datacentres: dc1 = {1, 2}, dc2 = {3}.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("CLUSTER_HOSTS") == "" {
		t.Fatal("clustertest: CLUSTER_HOSTS is unset; run these tests with `make test-cluster`, which starts the cluster")
	}
	c := &cluster{t: t}
	for _, line := range strings.Split(strings.TrimSpace(c.run("topology")), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, "topology line %q", line)
		c.nodes = append(c.nodes, node{n: len(c.nodes) + 1, addr: f[1], dc: f[2]})
	}
	require.Len(t, c.nodes, 3, "these tests need CLUSTER_NODES=3")
	require.Equal(t, []string{"dc1", "dc1", "dc2"}, []string{c.nodes[0].dc, c.nodes[1].dc, c.nodes[2].dc},
		"these tests need CLUSTER_DCS=2")
	// A test that failed half way must not leave the next one a partition or a dead node.
	t.Cleanup(func() {
		c.run("heal")
		for _, n := range c.nodes {
			if !c.answers(n) {
				c.run("restart", n.name())
			}
		}
	})
	return c
}

func (n node) name() string { return string(rune('0' + n.n)) }

// repair runs a full repair of ks from node 1. Just after a heal, gossip may not yet have
// marked every peer alive again, and the repair refuses to start: it waits until every node
// holds every replica alive, and a repair that still fails is tried again, for at most
// detectorTimeout.
func (c *cluster) repair(ks string) {
	c.t.Helper()
	var all []seen
	for _, n := range c.nodes {
		all = append(all, seen{via: n, alive: replicas})
	}
	if took, ok := c.waitSeen(ks, all...); !ok {
		c.t.Logf("repair of %s: not every node held every replica alive after %v; repairing anyway", ks, took)
	}
	deadline := time.Now().Add(detectorTimeout)
	for {
		_, err := c.try("nodetool", "1", "repair", "-full", ks)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("repair of %s: %v", ks, err)
		}
		time.Sleep(5 * time.Second)
	}
}

// replicas is how many replicas every key of the tests' keyspaces has: one on every node.
const replicas = 3

// detectorTimeout bounds every wait for the failure detectors. With Cassandra's default
// phi_convict_threshold a peer that stops answering is convicted after about ten seconds of
// silence, and a peer back up is marked alive at its first gossip; a loaded two-core machine
// can take several times as long for either.
const detectorTimeout = 3 * time.Minute

// seen is what one node's failure detector must hold: alive of the key's replicas (the node
// itself included) alive.
type seen struct {
	via   node
	alive int
}

// waitSeen waits until every node of want holds as many replicas alive as it says, and returns
// how long that took and whether it happened within detectorTimeout. Availability is measured
// from there: before a node has convicted a dead peer it still sends it its share of every
// request and waits for it, so what a phase shows in its first seconds is the failure
// detector's delay on that machine, not what the toolkit does with a node down.
func (c *cluster) waitSeen(ks string, want ...seen) (time.Duration, bool) {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(detectorTimeout)
	for _, w := range want {
		last := -1
		for last != w.alive {
			if time.Now().After(deadline) {
				c.t.Logf("node %s holds %d replicas alive after %v, not %d", w.via.name(), last, time.Since(start), w.alive)
				return time.Since(start), false
			}
			if last = c.liveReplicas(w.via, ks); last != w.alive {
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	c.t.Logf("nodes hold the replicas alive that they should after %v", time.Since(start).Round(time.Millisecond))
	return time.Since(start), true
}

// liveReplicas asks node n alone how many replicas of a key of ks its failure detector holds
// alive, with a read at ALL that n coordinates: it succeeds when n holds all of them alive
// (and they answer), and fails at once with Unavailable, which names how many it holds alive,
// when n has convicted one. -1: the read timed out or failed otherwise (n still waits for a
// replica it holds alive, or n does not answer).
func (c *cluster) liveReplicas(n node, ks string) int {
	cfg := c.config(nil)
	cfg.Hosts = []string{n.addr}
	cfg.DisableInitialHostLookup = true
	cfg.Timeout = 2 * time.Second
	s, err := cfg.CreateSession()
	if err != nil {
		return -1
	}
	defer s.Close()
	var status string
	err = s.Query("SELECT status FROM "+ks+".idempotency_keys WHERE namespace = ? AND key = ?", "probe", "probe").
		Consistency(gocql.All).Scan(&status)
	var unavailable *gocql.RequestErrUnavailable
	switch {
	case err == nil, errors.Is(err, gocql.ErrNotFound):
		return replicas
	case errors.As(err, &unavailable):
		return unavailable.Alive
	}
	return -1
}

// run runs cluster.sh with args and returns its standard output; a failure fails the test.
func (c *cluster) run(args ...string) string {
	c.t.Helper()
	out, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("cluster.sh %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// try runs cluster.sh with args and returns its standard output and error.
func (c *cluster) try(args ...string) (string, error) {
	c.t.Helper()
	// Longer than cluster.sh's own bound on a node's start (CLUSTER_START_TIMEOUT, 10 minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	c.t.Logf("cluster.sh %s (%v): %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond),
		strings.TrimSpace(stderr.String()))
	return string(out), err
}

// answers reports whether node n answers a CQL query now.
func (c *cluster) answers(n node) bool {
	cfg := c.config(nil)
	cfg.Hosts = []string{n.addr}
	cfg.DisableInitialHostLookup = true
	s, err := cfg.CreateSession()
	if err != nil {
		return false
	}
	defer s.Close()
	return s.Query("SELECT release_version FROM system.local").Exec() == nil
}

// hosts lists every node's CQL address.
func (c *cluster) hosts() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.addr)
	}
	return out
}

// config is a client of the whole cluster, narrowed by filter when it is not nil: QUORUM and
// SERIAL, token-aware routing, no driver retries (an LWT is never sent twice), and a client
// timeout longer than the server's so that a server timeout arrives as such.
func (c *cluster) config(filter gocql.HostFilter) *gocql.ClusterConfig {
	cfg := gocql.NewCluster(c.hosts()...)
	cfg.Consistency = gocql.Quorum
	cfg.SerialConsistency = gocql.Serial
	cfg.Timeout = 6 * time.Second
	cfg.ConnectTimeout = 5 * time.Second
	cfg.ReconnectInterval = time.Second
	cfg.RetryPolicy = nil
	cfg.HostFilter = filter
	// The driver's handler of a schema event (the tests' DROP KEYSPACE) waits for agreement in a
	// goroutine that Close does not stop; the tests need no schema events.
	cfg.Events.DisableSchemaEvents = true
	cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	return cfg
}

// dcConfig is a client of one datacentre only, at LOCAL_QUORUM and LOCAL_SERIAL.
func (c *cluster) dcConfig(dc string) *gocql.ClusterConfig {
	cfg := c.config(gocql.DataCentreHostFilter(dc))
	cfg.Consistency = gocql.LocalQuorum
	cfg.SerialConsistency = gocql.LocalSerial
	cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(dc))
	return cfg
}

// session connects cfg and closes the session when the test ends.
func (c *cluster) session(cfg *gocql.ClusterConfig) *gocql.Session {
	c.t.Helper()
	s, err := cfg.CreateSession()
	require.NoError(c.t, err, "connect to %v", cfg.Hosts)
	c.t.Cleanup(s.Close)
	return s
}

// keyspace creates a fresh keyspace with the schema, replicated as repl (every node must be up),
// and drops it when the test ends.
func (c *cluster) keyspace(name string, repl schema.Replication) string {
	c.t.Helper()
	cfg := c.config(nil)
	// Schema changes wait for every node's agreement, which takes seconds on a loaded machine.
	cfg.Timeout = 20 * time.Second
	admin := c.session(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	for try := 1; ; try++ {
		if err = schema.Apply(ctx, admin, schema.WithKeyspace(name), schema.WithReplication(repl)); err == nil || try == 3 {
			break
		}
		c.t.Logf("apply schema to %s: %v; trying again", name, err)
		time.Sleep(2 * time.Second) // what failed at once (a node not yet agreeing) takes seconds to pass
	}
	require.NoError(c.t, err)
	c.t.Cleanup(func() {
		if err := admin.Query("DROP KEYSPACE IF EXISTS " + name).Exec(); err != nil {
			c.t.Logf("drop keyspace %s: %v", name, err)
		}
	})
	return name
}

// threeReplicas places a replica on every node: QUORUM is two of three in any datacentres.
var threeReplicas = schema.NetworkTopologyStrategy(map[string]int{"dc1": 2, "dc2": 1})
