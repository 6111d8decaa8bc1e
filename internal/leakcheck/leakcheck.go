// Package leakcheck fails a test binary whose tests leave goroutines running, as goleak does,
// except for the goroutines gocql leaves behind a closed session: they are the driver's, no
// call of ours can stop them, and they end by themselves, but on a loaded machine they can end
// after the tests did. Every test binary that opens sessions uses it, so the list lives here once.
package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Main runs the tests of m and fails the binary if they leave a goroutine running that is not
// one of the driver's listed in driverGoroutines. Call it from TestMain.
func Main(m *testing.M) { goleak.VerifyTestMain(m, driverGoroutines()...) }

// driverGoroutines returns the goleak options for gocql's goroutines that outlive their
// session's Close:
//   - a pool whose dial to a node failed (a node a test stopped, cut off or slowed down, or a
//     connection that timed out on a loaded machine) sleeps a second before it tries again, as
//     many times as its reconnection policy allows, and only then sees that its session is closed
//     (schema's tests on a loaded CI run);
//   - a node's UP event is handled in a goroutine that first sleeps the driver's node-up delay
//     (10 s for Cassandra 5.0, gocql's handleNodeUp): a node brought back in a test's last seconds
//     left one sleeping after the tests ended (internal/clustertest on a loaded CI run).
func driverGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*Session).handleNodeUp"),
	}
}
