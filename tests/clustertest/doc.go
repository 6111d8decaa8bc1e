// Package clustertest holds the tests that need a cluster whose links can fail: three
// Cassandra nodes in two datacentres, each a host of its own in a network namespace, made by
// scripts/cluster/cluster.sh. They kill and restart a node, isolate a node, cut a node off
// from its peers while its client still reaches it, and cut the link between the
// datacentres, while the executor, the consumer guard and the event log keep working; then
// they count what was acknowledged, lost, run twice and left unknown.
//
// The tests build only with the tag cluster and need CLUSTER_HOSTS (the cluster's contact
// points) and root: `make test-cluster` starts the cluster, runs them and tears it down, on
// failure too. Plain `go test ./...` compiles this package without tests.
package clustertest
