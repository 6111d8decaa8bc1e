package importcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/depcheck"
)

const module = "github.com/cassdedup/cassdedup"

// TestStoresBesideLWTDoNotImportItsStateMachine: counters and events report to lwt's Observer
// and return its sentinels, all of which live below lwt (lwt/observe, lwt/cas), so neither
// package, nor anything it imports, imports the executor's state machine.
func TestStoresBesideLWTDoNotImportItsStateMachine(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"counters", "events"} {
		for _, dep := range depcheck.Imported(t, []string{"../../" + pkg}, module+"/lwt") {
			if dep == module+"/lwt" {
				t.Errorf("%s imports %s (go list -deps ./%s | grep -x %s): it must need only lwt/observe and lwt/cas",
					pkg, dep, pkg, dep)
			}
		}
	}
}

// TestInternalHoldsLeavesOnly: internal/ holds helpers at the bottom of the import graph, which
// the library's packages import; a package there that imported the library (lwt, schema,
// cqlsession, guard, ...) would run the arrows both ways. Glue above the library lives beside
// what it serves (lwt/storeopt, cmd/internal/connect, testnode), and the test suites that drive
// the library from outside live in tests/. Test files count too: a helper's own tests stay at
// its level.
func TestInternalHoldsLeavesOnly(t *testing.T) {
	t.Parallel()
	all := depcheck.Imports(t, "cluster,faults,soak,histories", "../../internal/...")
	for pkg, imports := range all {
		for _, imp := range imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue // the standard library or another module
			}
			if imp != pkg && !strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s, a package of the library: internal/ holds leaves only", pkg, imp)
			}
		}
	}
}

// TestSessionTestsUseLeakcheck: a package of make test whose tests open sessions on the test
// node checks for leaked goroutines with internal/leakcheck, which knows the goroutines gocql
// leaves behind a closed session; goleak alone fails such a package whenever a loaded machine
// keeps one of them alive past the end of the tests (lwt/clock, once). The suites behind build
// tags drive processes and nodes of their own and are left out.
func TestSessionTestsUseLeakcheck(t *testing.T) {
	t.Parallel()
	all := depcheck.Imports(t, "", "../../...")
	for pkg, imports := range all {
		if slices.Contains(imports, module+"/testnode") && !slices.Contains(imports, module+"/internal/leakcheck") {
			t.Errorf("%s's tests open sessions with testnode but its TestMain does not call leakcheck.Main", pkg)
		}
	}
}
