package storeopt

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a goroutine that these tests started outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
