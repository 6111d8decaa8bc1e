//go:build cluster

package clustertest

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
)

// TestMain fails the run when a goroutine that these tests started outlives them. The tests
// kill, isolate and cut nodes, so the driver's pools may still be dialling one, or waiting to
// use a node that came back, when the tests end (see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }
