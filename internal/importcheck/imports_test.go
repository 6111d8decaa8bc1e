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
