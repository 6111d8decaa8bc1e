package readmecheck

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/cassdedup/cassdedup"

// moduleRoot finds the library module's root above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the test's directory", modulePath)
		}
		dir = parent
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snippetPos matches a position in a block written by TestReadmeGoBlocksCompile.
var snippetPos = regexp.MustCompile(`\S*block(\d+)/snippet\.go:(\d+)`)

// TestReadmeGoBlocksCompile writes every Go block of README.md as a package of its own inside
// the module and vets it, so a block that stops compiling against the current API (or was never
// gofmt-formatted) fails the run with the README's line.
func TestReadmeGoBlocksCompile(t *testing.T) {
	root := moduleRoot(t)
	all, err := blocks(readFile(t, filepath.Join(root, "README.md")))
	if err != nil {
		t.Fatal(err)
	}
	var goBlocks []block
	for _, b := range all {
		if b.lang == "go" {
			goBlocks = append(goBlocks, b)
		}
	}
	if len(goBlocks) == 0 {
		t.Fatal("README.md has no Go block: the quick start is gone")
	}
	// Inside the module, so the blocks import its packages as they are; the leading underscore
	// keeps the directory out of ./... patterns if a run is killed before its cleanup.
	dir, err := os.MkdirTemp(".", "_readme")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var pkgs []string
	for i, b := range goBlocks {
		if !strings.HasPrefix(strings.TrimSpace(b.text), "package ") {
			t.Errorf("README.md:%d: a Go block must be a whole file, starting with its package clause", b.line)
			continue
		}
		if formatted, err := format.Source([]byte(b.text)); err == nil && !bytes.Equal(formatted, []byte(b.text)) {
			t.Errorf("README.md:%d: the Go block is not gofmt-formatted", b.line)
		}
		sub := filepath.Join(dir, fmt.Sprintf("block%d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "snippet.go"), []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(sub))
	}
	if len(pkgs) == 0 {
		return
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the README's blocks: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, append([]string{"vet"}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// Point at the README's lines: a block's line n is the README's line (fence + n).
		msg := snippetPos.ReplaceAllStringFunc(string(out), func(pos string) string {
			m := snippetPos.FindStringSubmatch(pos)
			i, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			return fmt.Sprintf("README.md:%d", goBlocks[i].line+n)
		})
		t.Errorf("the README's Go blocks do not build (go vet: %v):\n%s", err, msg)
	}
}

// TestRelativeLinksResolve checks that every relative link of README.md and docs/*.md names a
// file that exists and, when it names a heading of a Markdown file, a heading that exists.
func TestRelativeLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		name, _ := filepath.Rel(root, file)
		for _, l := range links(readFile(t, file)) {
			if !isRelative(l.target) {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: link %q: no such file", name, l.line, l.target)
				continue
			}
			if frag != "" && strings.HasSuffix(target, ".md") && !anchors(readFile(t, target))[frag] {
				t.Errorf("%s:%d: link %q: no such heading", name, l.line, l.target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link extraction is broken")
	}
}
