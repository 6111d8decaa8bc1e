// Package depcheck lists what packages build with, for the tests that hold the import graph to
// the layout: the outbox imports nothing of the guard, the Kafka consumer adapter nothing of the
// outbox. It asks the go command, so it sees what a build sees, build tags and modules included.
package depcheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Imported returns the packages that pkgs (patterns of go list, relative to the calling test's
// directory) depend on, their tests left out, that are one of roots or lie below one.
func Imported(t testing.TB, pkgs []string, roots ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("depcheck: the go command is needed to list the imports: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("depcheck: go list -deps %s: %v", strings.Join(pkgs, " "), err)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, r+"/") {
				found = append(found, p)
				break
			}
		}
	}
	return found
}

// Imports returns, for each package that pkgs match (patterns of go list, relative to the
// calling test's directory) when built with tags (comma-separated, "" for none), the packages it
// imports itself, its tests' imports included: for rules on a package's own imports rather than
// on everything it builds with. It fails t when the patterns match no package: a rule checked
// over no package would pass whatever the imports.
func Imports(t testing.TB, tags string, pkgs ...string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("depcheck: the go command is needed to list the imports: %v", err)
	}
	const format = `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`
	cmd := exec.Command(goTool, append([]string{"list", "-tags", tags, "-f", format}, pkgs...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("depcheck: go list %s: %v", strings.Join(pkgs, " "), err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	if len(imports) == 0 {
		t.Fatalf("depcheck: go list %s listed no package", strings.Join(pkgs, " "))
	}
	return imports
}
