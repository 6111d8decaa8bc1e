package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cassdedup/cassdedup/internal/testnode"
)

// TestMain fails the run when a goroutine that these tests started outlives them. The password
// and TLS tests stop nodes of their own, so the driver's pools may still be dialling them when
// the tests end (see testnode.DriverReconnects).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testnode.DriverReconnects()...)
}
