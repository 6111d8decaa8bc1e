package schema

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ErrInvalidReplication is returned for a replication setting Cassandra would reject or that
// cannot hold the toolkit's data safely: no strategy, no datacenter, a replication factor
// outside 1..32, or a datacenter name that is not safe inside a CQL map literal.
var ErrInvalidReplication = errors.New("schema: invalid replication")

// Replication is a keyspace's replication strategy. Build one with SimpleStrategy or
// NetworkTopologyStrategy.
type Replication struct {
	class   string
	factors map[string]int // "replication_factor" for SimpleStrategy, datacenter names otherwise
}

// SimpleStrategy places rf replicas without regard to datacenters: for one-datacenter test
// clusters. It is the default, with rf 1.
func SimpleStrategy(rf int) Replication {
	return Replication{class: "SimpleStrategy", factors: map[string]int{"replication_factor": rf}}
}

// NetworkTopologyStrategy places the given number of replicas in each named datacenter: the
// production choice (RF 3 per datacenter lets QUORUM and SERIAL survive one replica down).
// A datacenter name is a letter or digit followed by up to 63 letters, digits, '_', '.' or '-'.
func NetworkTopologyStrategy(perDatacenter map[string]int) Replication {
	factors := make(map[string]int, len(perDatacenter))
	for dc, rf := range perDatacenter {
		factors[dc] = rf
	}
	return Replication{class: "NetworkTopologyStrategy", factors: factors}
}

// Datacenter names travel inside a CQL map literal, so only characters that need no escaping.
var datacenterPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`)

// cql renders the replication map literal after validating it.
func (r Replication) cql() (string, error) {
	if r.class == "" {
		return "", fmt.Errorf("%w: empty; use SimpleStrategy or NetworkTopologyStrategy", ErrInvalidReplication)
	}
	if len(r.factors) == 0 {
		return "", fmt.Errorf("%w: %s needs at least one datacenter", ErrInvalidReplication, r.class)
	}
	for k, rf := range r.factors {
		if rf < 1 || rf > 32 {
			return "", fmt.Errorf("%w: replication factor %d for %q is outside 1..32", ErrInvalidReplication, rf, k)
		}
		if !datacenterPattern.MatchString(k) {
			return "", fmt.Errorf("%w: datacenter name %q must be a letter or digit followed by up to 63 letters, digits, '_', '.' or '-'", ErrInvalidReplication, k)
		}
	}
	return r.String(), nil
}

// String renders the replication as the map literal CREATE KEYSPACE takes.
func (r Replication) String() string {
	keys := make([]string, 0, len(r.factors))
	for k := range r.factors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("'class': '%s'", r.class)}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("'%s': %d", k, r.factors[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
