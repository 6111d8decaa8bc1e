package importcheck

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/cassdedup/cassdedup"

// goList runs go list with args in the module's root and returns its output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestStoresBesideLWTDoNotImportItsStateMachine: counters and events report to lwt's Observer
// and return its sentinels, all of which live below lwt (lwt/observe, lwt/cas), so neither
// package, nor anything it imports, imports the executor's state machine.
func TestStoresBesideLWTDoNotImportItsStateMachine(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"counters", "events"} {
		for _, dep := range goList(t, "-deps", "./"+pkg) {
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
	const format = "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}"
	lines := goList(t, "-tags", "cluster,faults,soak,histories", "-f", format, "./internal/...")
	if len(lines) == 0 {
		t.Fatal("go list ./internal/... listed no package")
	}
	for _, line := range lines {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue // the standard library or another module
			}
			if imp != pkg && !strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s, a package of the library: internal/ holds leaves only", pkg, imp)
			}
		}
	}
}
