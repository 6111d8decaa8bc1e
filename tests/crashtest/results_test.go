//go:build faults

package crashtest

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// result is one line of the results table: what one scenario did to one primitive.
type result struct {
	Scenario     string
	Operations   int // calls made before the fault
	Acknowledged int // of those, calls that returned success
	Lost         int // acknowledged effects gone after the fault
	Twice        int // effects that happened twice (a function run, a count)
	Unknown      int // calls that returned an error: their outcome was unknown to the caller
	Resolution   string
}

// table collects the results of every test in the run; TestMain prints it at the end.
type table struct {
	mu   sync.Mutex
	rows []result
}

var results table

// add records r and logs it under the test, so a run that fails midway still shows it.
func (tb *table) add(t *testing.T, r result) {
	t.Helper()
	t.Logf("crashtest: %s: %d operations, %d acknowledged, %d lost, %d twice, %d unknown (%s)",
		r.Scenario, r.Operations, r.Acknowledged, r.Lost, r.Twice, r.Unknown, r.Resolution)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

func (tb *table) print(w io.Writer) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncrash test results:")
	fmt.Fprintln(w, "| scenario | operations | acknowledged | lost | twice | outcomes unknown | how they were resolved |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range tb.rows {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %s |\n", r.Scenario, r.Operations, r.Acknowledged,
			r.Lost, r.Twice, r.Unknown, strings.ReplaceAll(r.Resolution, "|", "/"))
	}
}
