//go:build faults

package crashtest

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, when the test binary was started as a worker process by one of
// them (see worker_test.go), that worker alone. After the tests it prints the results table.
func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	code := m.Run()
	results.print(os.Stdout)
	os.Exit(code)
}
