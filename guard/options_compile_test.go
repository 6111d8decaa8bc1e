package guard_test

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

// exportData returns the compiler's export data files of the guard and events packages and of
// everything they import, built (or found in the build cache) by go list.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to type-check the sources: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}",
		"github.com/cassdedup/cassdedup/guard", "github.com/cassdedup/cassdedup/events", "time")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			files[path] = file
		}
	}
	return files
}

// typeCheck type-checks src, a file of package main, against the compiled guard and events
// packages and returns the type errors.
func typeCheck(t *testing.T, files map[string]string, src string) []error {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(path string) (io.ReadCloser, error) { return os.Open(files[path]) }
	var errs []error
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup), Error: func(err error) { errs = append(errs, err) }}
	_, _ = conf.Check("main", fset, []*ast.File{f}, nil)
	return errs
}

// TestOptionsOfTheOtherPackageDoNotCompile: a guard option passed to events.NewLog, or an events
// option passed to guard.New, is a type error, not a run-time refusal. The same sources with
// each package's own options type-check, so the harness itself is shown to work.
func TestOptionsOfTheOtherPackageDoNotCompile(t *testing.T) {
	t.Parallel()
	files := exportData(t)
	const head = "package main\n\nimport (\n\t\"time\"\n\n\t\"github.com/cassdedup/cassdedup/events\"\n\t\"github.com/cassdedup/cassdedup/guard\"\n)\n\n" +
		"var _ = time.Hour\n\n"
	own := head + "func main() {\n\tguard.New(nil, guard.WithRetention(time.Hour))\n\tevents.NewLog(nil, events.WithParts(8))\n}\n"
	if errs := typeCheck(t, files, own); len(errs) != 0 {
		t.Fatalf("each package's own options do not type-check: %v", errs)
	}
	for name, call := range map[string]string{
		"guard option to events.NewLog": "events.NewLog(nil, guard.WithRetention(time.Hour))",
		"events option to guard.New":    "guard.New(nil, events.WithParts(8))",
		"shared-looking option":         "events.NewLog(nil, guard.WithKeyspace(\"ks\"))",
	} {
		errs := typeCheck(t, files, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, call, errs)
		}
	}
}
