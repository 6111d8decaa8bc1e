// Package typecheck type-checks a small program against the module's compiled packages, for
// tests that show a misuse of an API does not compile (an option of one constructor passed to
// another): the same source with the right calls is checked too, so the harness is shown to work.
//
// Its functions need the go command (go list -export) and are safe for use from parallel tests.
package typecheck

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Packages holds the compiler's export data files of some packages and of everything they
// import, by import path.
type Packages map[string]string

// Load returns the export data of pkgs and their dependencies, built (or found in the build
// cache) by go list.
func Load(t testing.TB, pkgs ...string) Packages {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to type-check the sources: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}, pkgs...)
	cmd := exec.CommandContext(t.Context(), goTool, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := Packages{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			files[path] = file
		}
	}
	return files
}

// Check type-checks src, a file of package main, against the loaded packages and returns the
// type errors.
func (p Packages) Check(t testing.TB, src string) []error {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(path string) (io.ReadCloser, error) { return os.Open(p[path]) }
	var errs []error
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup), Error: func(err error) { errs = append(errs, err) }}
	_, _ = conf.Check("main", fset, []*ast.File{f}, nil)
	return errs
}

// Rejects checks an API's types with a package main importing imports (loaded with Load): the
// statements of right, which use the API as it is meant, must type-check, so the harness is shown
// to work; and each statement of wrong, by name, must not, refused as an argument of the wrong
// type ("cannot use"). A program importing "time" gets a blank use of it, so a statement need
// not use it.
func Rejects(t testing.TB, imports, right []string, wrong map[string]string) {
	t.Helper()
	p := Load(t, imports...)
	head := program(imports)
	if errs := p.Check(t, head+mainOf(right...)); len(errs) != 0 {
		t.Fatalf("the right uses do not type-check: %v", errs)
	}
	for name, stmt := range wrong {
		errs := p.Check(t, head+mainOf(stmt))
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, stmt, errs)
		}
	}
}

// program is the head of a file of package main that imports imports.
func program(imports []string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, path := range imports {
		b.WriteString("\t\"" + path + "\"\n")
	}
	b.WriteString(")\n\n")
	if slices.Contains(imports, "time") {
		b.WriteString("var _ = time.Hour\n\n")
	}
	return b.String()
}

// mainOf is a main function of the statements.
func mainOf(stmts ...string) string {
	return "func main() {\n\t" + strings.Join(stmts, "\n\t") + "\n}\n"
}
