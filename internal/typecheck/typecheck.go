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
