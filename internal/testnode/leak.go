package testnode

import "go.uber.org/goleak"

// DriverReconnects returns the goleak options for the goroutines gocql leaves behind a closed
// session after a node came and went. A pool whose dial to a node a test stopped, cut off or
// slowed down failed sleeps a second before it tries again (as many times as its reconnection
// policy allows), and only then sees that its session is closed. A node's UP event is handled in
// a goroutine that first sleeps the driver's node-up delay (10 s for Cassandra 5.0, gocql's
// handleNodeUp), which its session's Close does not stop: a node brought back in a test's last
// seconds left one sleeping after the tests ended (internal/clustertest on a loaded CI run).
// They all end by themselves, but can end after the tests did.
func DriverReconnects() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*Session).handleNodeUp"),
	}
}
