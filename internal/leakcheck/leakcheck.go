// Package leakcheck fails a test binary whose tests leave goroutines running, as goleak does,
// except for the goroutines gocql leaves behind a closed session: they are the driver's, no
// call of ours can stop them, and they end by themselves, but on a loaded machine they can end
// after the tests did. Every test binary that opens sessions uses it, so the list lives here once.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// grace is how long the goroutines the tests started get to end after the last test. goleak's
// own wait is under half a second; on a loaded two-core machine a goroutine that ends by itself
// within milliseconds (a write or a read of ours finishing on a closed session, one of the
// driver's noticing the close) can wait longer than that to be scheduled. One still running
// after ten seconds is a leak.
const grace = 10 * time.Second

// Main runs the tests of m and fails the binary if they leave a goroutine running for longer
// than grace that is not one of the driver's listed in DriverGoroutines. It names the
// goroutines on stderr, in a line that starts with "goleak:". Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		start := time.Now()
		late, err := find(grace, DriverGoroutines()...)
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "goleak: goroutines still running %v after the tests ended: %v\n", grace, err)
			code = 1
		case late != nil: // worth knowing: what ends late on a loaded machine
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines ended %v after the tests: %.3000v\n", time.Since(start).Round(time.Millisecond), late)
		}
	}
	os.Exit(code)
}

// find waits up to wait for the goroutines other than the caller's to end. It returns goleak's
// report of those still running once wait has passed (err), and its first report (late), which
// names the goroutines that outlived goleak's own wait even if they ended later; both are nil
// when every goroutine ended within goleak's wait.
func find(wait time.Duration, opts ...goleak.Option) (late, err error) {
	deadline := time.Now().Add(wait)
	for {
		err = goleak.Find(opts...)
		if err == nil {
			return late, nil
		}
		if late == nil {
			late = err
		}
		if time.Now().After(deadline) {
			return late, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DriverGoroutines returns the goleak options that ignore the goroutines gocql starts on its own
// and that can outlive their session's Close. Main uses them; a test that checks for leaks
// itself while sessions are open (goleak.VerifyNone) passes them too. They are:
//   - a pool whose dial to a node failed (a node a test stopped, cut off or slowed down, or a
//     connection that timed out on a loaded machine) sleeps a second before it tries again, as
//     many times as its reconnection policy allows, and only then sees that its session is closed
//     (schema's tests on a loaded CI run);
//   - a node's UP event is handled in a goroutine that first sleeps the driver's node-up delay
//     (10 s for Cassandra 5.0, gocql's handleNodeUp): a node brought back in a test's last seconds
//     left one sleeping after the tests ended (tests/clustertest on a loaded CI run);
//   - a keyspace's schema event (a test creating or dropping its keyspace) is handled in a
//     goroutine that waits for schema agreement on the control connection with no context
//     (gocql's handleKeyspaceChange): once the session is closed its queries fail, and it tries
//     again every 200 ms until the session's MaxWaitSchemaAgreement (60 s by default) has passed
//     (cmd/cassdedup on a loaded CI run).
func DriverGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*Session).handleNodeUp"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*Session).handleKeyspaceChange"),
	}
}
