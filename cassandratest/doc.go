// Package cassandratest gives tests a real Cassandra: call [NewSession](t) for a *gocql.Session
// on a fresh, uniquely named keyspace with cassdedup's schema applied, dropped when the test ends.
//
// It is a module of its own, github.com/cassdedup/cassdedup/cassandratest, because it speaks to
// Docker through testcontainers-go: a service that imports the library does not download Docker's
// client; only a module that requires this one for its tests does.
//
// The node is found in this order:
//
//  1. CASSANDRA_HOSTS, a comma-separated host[:port] list: any cluster (a local node, docker
//     compose, a remote test cluster);
//  2. a Docker engine, when one answers: a Cassandra 5.0 container with paxos_variant v2, started
//     once per test binary through testcontainers-go and removed by its reaper;
//  3. otherwise the test fails, naming `make cassandra-up` (which starts a local node from Maven
//     Central) and CASSANDRA_HOSTS. It never skips: a test that needs Cassandra and has none is a
//     failure, not a pass.
//
// Everything in this package is safe for use from parallel tests.
package cassandratest
