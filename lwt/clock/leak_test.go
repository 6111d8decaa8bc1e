package clock

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
)

// TestMain fails the run when a goroutine that these tests started outlives them (gocql's own
// goroutines behind a closed session aside: see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }
