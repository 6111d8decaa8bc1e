package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine that these tests started outlives them. The password
// and TLS tests stop nodes of their own; a gocql connection pool whose dial to such a node failed
// sleeps a second before it looks again, and only then sees its session closed, which can be
// after the tests ended: those two driver goroutines end by themselves and are not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connectMany"),
		goleak.IgnoreAnyFunction("github.com/gocql/gocql.(*hostConnPool).connect"))
}
