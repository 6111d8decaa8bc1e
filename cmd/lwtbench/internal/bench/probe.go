package bench

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gocql/gocql"
)

// NodeConfig is what the cluster says about itself; every result carries it, because an LWT's
// cost depends on all of it.
type NodeConfig struct {
	CassandraVersion     string `json:"cassandra_version"`
	PaxosVariant         string `json:"paxos_variant"`
	PaxosStatePurging    string `json:"paxos_state_purging"`
	CommitlogSync        string `json:"commitlog_sync"`
	CommitlogSyncPeriod  string `json:"commitlog_sync_period"`
	CommitlogGroupWindow string `json:"commitlog_sync_group_window"`
	CASContentionTimeout string `json:"cas_contention_timeout"`
	WriteRequestTimeout  string `json:"write_request_timeout"`
	// SkipSync is the test-only -Dcassandra.skip_sync=true: the commitlog is never fsynced, so
	// writes look cheaper than on any durable node. A result with it set is not a benchmark.
	SkipSync    bool   `json:"skip_sync"`
	Datacenter  string `json:"datacenter"` // of the node that answered
	Nodes       int    `json:"nodes"`      // that node and its peers
	Replication string `json:"replication"`
}

// settingsProbed maps system_views.settings names to the NodeConfig field they fill.
func (n *NodeConfig) settingsProbed() map[string]*string {
	return map[string]*string{
		"paxos_variant":               &n.PaxosVariant,
		"paxos_state_purging":         &n.PaxosStatePurging,
		"commitlog_sync":              &n.CommitlogSync,
		"commitlog_sync_period":       &n.CommitlogSyncPeriod,
		"commitlog_sync_group_window": &n.CommitlogGroupWindow,
		"cas_contention_timeout":      &n.CASContentionTimeout,
		"write_request_timeout":       &n.WriteRequestTimeout,
	}
}

// unknown is recorded for a setting the cluster does not expose (system_views appeared in 4.0).
const unknown = "unknown"

// probeNode reads the node's configuration and the keyspace's replication. Only the version is
// required; a setting that cannot be read is recorded as unknown, never guessed.
func probeNode(ctx context.Context, s *gocql.Session, keyspace string) (NodeConfig, error) {
	var n NodeConfig
	if err := s.Query(`SELECT release_version, data_center FROM system.local`).WithContext(ctx).
		Scan(&n.CassandraVersion, &n.Datacenter); err != nil {
		return n, fmt.Errorf("read system.local: %w", err)
	}
	fields := n.settingsProbed()
	for _, f := range fields {
		*f = unknown
	}
	names := slices.Sorted(maps.Keys(fields))
	iter := s.Query(`SELECT name, value FROM system_views.settings WHERE name IN ?`, names).WithContext(ctx).Iter()
	var name, value string
	for iter.Scan(&name, &value) {
		if f, ok := fields[name]; ok && value != "" {
			*f = value
		}
	}
	_ = iter.Close() // a cluster without system_views keeps "unknown"
	var skip string
	if err := s.Query(`SELECT value FROM system_views.system_properties WHERE name = 'cassandra.skip_sync'`).
		WithContext(ctx).Scan(&skip); err == nil {
		n.SkipSync = strings.EqualFold(skip, "true")
	}
	n.Nodes = 1
	var peers int
	if err := s.Query(`SELECT COUNT(*) FROM system.peers_v2`).WithContext(ctx).Scan(&peers); err == nil {
		n.Nodes += peers
	}
	n.Replication = unknown
	var repl map[string]string
	if err := s.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, keyspace).
		WithContext(ctx).Scan(&repl); err == nil {
		n.Replication = formatReplication(repl)
	}
	return n, nil
}

// formatReplication renders a replication map as "SimpleStrategy replication_factor=3" or
// "NetworkTopologyStrategy dc1=3 dc2=3".
func formatReplication(repl map[string]string) string {
	class := repl["class"]
	class = class[strings.LastIndex(class, ".")+1:]
	parts := []string{class}
	for _, k := range slices.Sorted(maps.Keys(repl)) {
		if k != "class" {
			parts = append(parts, k+"="+repl[k])
		}
	}
	return strings.Join(parts, " ")
}

// ClientConfig is the client side of a run.
type ClientConfig struct {
	Driver         string   `json:"driver"`
	GoVersion      string   `json:"go_version"`
	Hosts          []string `json:"hosts"`
	Session        string   `json:"session"` // recommended (cqlsession) or gocql defaults (-driver-defaults)
	HostPolicy     string   `json:"host_policy"`
	WriteCoalesce  string   `json:"write_coalesce_wait"`
	ConnsPerHost   int      `json:"conns_per_host"`
	Consistency    string   `json:"consistency"`
	Serial         string   `json:"serial_consistency"`
	RequestTimeout string   `json:"request_timeout"`
	DriverRetries  string   `json:"driver_retries"`
	Warmup         string   `json:"warmup"`
	PhaseDuration  string   `json:"phase_duration"`
	Concurrency    []int    `json:"concurrency"`
	Rate           float64  `json:"open_loop_rate_per_s"`
	OpenWorkers    int      `json:"open_loop_workers"`
	Operations     []string `json:"operations"`
}

// driverVersion reports the gocql module this binary was built with. (A test binary carries
// no module list, so there it is unknown.)
func driverVersion() string { return driverVersionFrom(debug.ReadBuildInfo()) }

func driverVersionFrom(info *debug.BuildInfo, ok bool) string {
	const path = "github.com/gocql/gocql"
	if !ok {
		return path + " " + unknown
	}
	for _, d := range info.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return path + " " + d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return path + " " + d.Version
		}
	}
	return path + " " + unknown
}

func clientConfig(c Config, cluster *gocql.ClusterConfig, info sessionInfo) ClientConfig {
	return ClientConfig{
		Driver:         driverVersion(),
		GoVersion:      runtime.Version(),
		Hosts:          c.Hosts,
		Session:        info.kind,
		HostPolicy:     info.policy,
		WriteCoalesce:  info.coalesce.String(),
		ConnsPerHost:   cluster.NumConns,
		Consistency:    c.Consistency.String(),
		Serial:         c.Serial.String(),
		RequestTimeout: c.RequestTimeout.String(),
		DriverRetries:  "none",
		Warmup:         c.Warmup.String(),
		PhaseDuration:  c.Duration.String(),
		Concurrency:    c.Concurrency,
		Rate:           c.Rate,
		OpenWorkers:    c.OpenWorkers,
		Operations:     c.Ops,
	}
}
