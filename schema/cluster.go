package schema

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gocql/gocql"
)

// ErrReplicationUnavailable is returned by Apply and Migrate, before they create anything,
// when the replication asked for needs more nodes in a datacenter than the cluster has (RF 3
// on a one-node cluster, or a datacenter no node is in): Cassandra would create the keyspace,
// and every QUORUM or SERIAL request on it would then fail as unavailable.
var ErrReplicationUnavailable = errors.New("schema: replication needs more nodes than the cluster has")

// nodesPerDatacenter counts the nodes the cluster knows in each datacenter (system.local and
// system.peers, as the coordinator sees them), down nodes included: a node that is down is
// still a replica, and a keyspace is created for the cluster, not for one afternoon.
func nodesPerDatacenter(ctx context.Context, session *gocql.Session) (map[string]int, error) {
	nodes := map[string]int{}
	for _, table := range []string{"system.local", "system.peers"} {
		var dc string
		iter := session.Query(`SELECT data_center FROM ` + table).WithContext(ctx).Iter()
		for iter.Scan(&dc) {
			nodes[dc]++
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("schema: read the cluster's nodes from %s: %w", table, err)
		}
	}
	return nodes, nil
}

// fits reports whether the cluster's nodes can hold every replica r asks for.
func (r Replication) fits(nodes map[string]int) error {
	total := 0
	for _, n := range nodes {
		total += n
	}
	if r.class == "SimpleStrategy" {
		if rf := r.factors["replication_factor"]; rf > total {
			return fmt.Errorf("%w: replication factor %d, but the cluster has %d node(s) (%s)", ErrReplicationUnavailable, rf, total, describeNodes(nodes))
		}
		return nil
	}
	dcs := make([]string, 0, len(r.factors))
	for dc := range r.factors {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	for _, dc := range dcs {
		if rf := r.factors[dc]; rf > nodes[dc] {
			return fmt.Errorf("%w: %d replicas in datacenter %q, which has %d node(s) (the cluster: %s)", ErrReplicationUnavailable, rf, dc, nodes[dc], describeNodes(nodes))
		}
	}
	return nil
}

func describeNodes(nodes map[string]int) string {
	dcs := make([]string, 0, len(nodes))
	for dc, n := range nodes {
		dcs = append(dcs, fmt.Sprintf("%q: %d", dc, n))
	}
	sort.Strings(dcs)
	return strings.Join(dcs, ", ")
}

// keyspaceReplication reads the replication of an existing keyspace.
func keyspaceReplication(ctx context.Context, session *gocql.Session, keyspace string) (Replication, error) {
	var m map[string]string
	err := session.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, keyspace).
		WithContext(ctx).Scan(&m)
	if err != nil {
		return Replication{}, fmt.Errorf("schema: read the replication of %s: %w", keyspace, err)
	}
	return replicationFromMap(m), nil
}

// replicationFromMap reads system_schema's replication map ({'class':
// 'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '3'}). A factor that
// is not a number (a transient replica, '3/1') counts its full replicas' total, the part before
// the slash.
func replicationFromMap(m map[string]string) Replication {
	class := m["class"]
	if i := strings.LastIndex(class, "."); i >= 0 {
		class = class[i+1:]
	}
	r := Replication{class: class, factors: map[string]int{}}
	for k, v := range m {
		if k == "class" {
			continue
		}
		full, _, _ := strings.Cut(v, "/")
		if n, err := strconv.Atoi(full); err == nil {
			r.factors[k] = n
		}
	}
	return r
}
