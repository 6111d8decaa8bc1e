package lwt

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSeamIsGroupedAndListed: every name that doc.go's section "For packages built on lwt"
// lists is declared in seam.go or a batch_*.go file, and every exported name that seam.go
// declares is listed there (a method with its type), so a reader of the package doc knows which names a service never
// needs, and a new seam name cannot slip in among the user API unlisted.
func TestSeamIsGroupedAndListed(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # For packages built on lwt\n")
	if !ok {
		t.Fatal(`doc.go has no section "For packages built on lwt"`)
	}
	section, _, _ = strings.Cut(section, "\n// #")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[(\w+(?:\.\w+)?)\]`).FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	declaredIn := exportedDecls(t)
	for name := range listed {
		file := declaredIn[name]
		if file != "seam.go" && !strings.HasPrefix(file, "batch_") {
			t.Errorf("doc.go lists %s as seam, but it is declared in %q, not seam.go or batch_*.go", name, file)
		}
	}
	for name, file := range declaredIn {
		typ, _, _ := strings.Cut(name, ".") // a method of a listed type is listed with it
		if file == "seam.go" && !listed[name] && !listed[typ] {
			t.Errorf("seam.go declares %s, which doc.go's section \"For packages built on lwt\" does not list", name)
		}
	}
}

// exportedDecls maps each exported type, function, constant, variable and method (as
// Type.Method) of the package's non-test files to its file.
func exportedDecls(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			for _, id := range declNames(d) {
				if ast.IsExported(id) {
					out[id] = name
				}
			}
		}
	}
	return out
}

// declNames are the names d declares: a method as Type.Method, so Store.Enter is told from Enter.
func declNames(d ast.Decl) []string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			return []string{d.Name.Name}
		}
		typ := d.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok && ast.IsExported(id.Name) {
			return []string{id.Name + "." + d.Name.Name}
		}
	case *ast.GenDecl:
		var names []string
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			}
		}
		return names
	}
	return nil
}
