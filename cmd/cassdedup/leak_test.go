package main

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
)

// TestMain fails the run when a goroutine that these tests started outlives them. The password
// and TLS tests stop nodes of their own, so the driver's pools may still be dialling them when
// the tests end (see leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }
