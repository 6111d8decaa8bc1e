//go:build cluster

package clustertest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cassdedup/cassdedup/internal/testnode"
)

// TestMain fails the run when a goroutine that these tests started outlives them. The tests
// kill, isolate and cut nodes, so the driver's pools may still be dialling one when the tests
// end (see testnode.DriverReconnects).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testnode.DriverReconnects()...) }
