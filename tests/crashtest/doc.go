// Package crashtest holds cassdedup's crash tests, run by `make test-faults`. Each test starts
// Cassandra nodes of its own with scripts/cassandra/node.sh (durable: the commitlog is fsynced,
// no test shortcuts), on loopback addresses and ports no other test uses; kills, restarts or
// freezes the node or the worker processes that use it; checks what survived; and prints what
// it measured. The nodes are stopped when each test ends, on failure too.
//
// The tests build only with the faults tag, so `go test ./...` (make test) does not run them a
// second time. They never skip: without Java 17 and Maven (or jars already cached) they fail,
// naming what is missing. CASSANDRA_HOSTS is not used, since a node the test cannot kill
// cannot show what a crash loses.
//
// TestOutboxChainCrashes does the same to the outbox chain: it starts a Kafka broker of its own
// with scripts/kafka/broker.sh and runs examples/outbox's order service, relays and consumer as
// processes of their own (-role), and kills them.
//
// The package has no code of its own besides its tests.
package crashtest
