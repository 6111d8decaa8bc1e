package readmecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goMod is what the version check reads from a go.mod file.
type goMod struct {
	module, goLine, toolchain string
}

// parseGoMod reads the module path and the go and toolchain lines of a go.mod file.
func parseGoMod(text string) (goMod, error) {
	var m goMod
	for line := range strings.Lines(text) {
		f := strings.Fields(strings.TrimSpace(line))
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "module":
			m.module = f[1]
		case "go":
			m.goLine = f[1]
		case "toolchain":
			m.toolchain = f[1]
		}
	}
	if m.module == "" || m.goLine == "" {
		return m, fmt.Errorf("no module or go line")
	}
	return m, nil
}

// makeModules is the Makefile's MODULES list: every module's directory.
func makeModules(makefile string) ([]string, error) {
	m := regexp.MustCompile(`(?m)^MODULES\s*:=\s*(.+)$`).FindStringSubmatch(makefile)
	if m == nil {
		return nil, fmt.Errorf("the Makefile sets no MODULES")
	}
	return strings.Fields(m[1]), nil
}

// moduleTable is the first column of the table under "## The modules" of docs/development.md.
func moduleTable(doc string) ([]string, error) {
	_, sec, ok := strings.Cut(doc, "\n## The modules\n")
	if !ok {
		return nil, fmt.Errorf(`no section "## The modules"`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(sec, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the modules section has no table of modules")
	}
	return out, nil
}

// minor is the major.minor release of a go line or toolchain name ("1.26.0", "go1.27.3").
func minor(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "go"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// next is the release after a major.minor one.
func next(release string) string {
	maj, min, _ := strings.Cut(release, ".")
	n, err := strconv.Atoi(min)
	if err != nil {
		return ""
	}
	return maj + "." + strconv.Itoa(n+1)
}

// versionProblems says where the go.mod files, the Makefile's MODULES, docs/development.md and
// the README disagree: one go line and one toolchain line in every module, the table naming
// every module, and the supported releases said as the go line and the release after it.
func versionProblems(mods map[string]goMod, dirs []string, devDoc, readme string) []string {
	var problems []string
	var paths []string
	goLines, toolchains := map[string][]string{}, map[string][]string{}
	for _, d := range dirs {
		m, ok := mods[d]
		if !ok {
			problems = append(problems, fmt.Sprintf("MODULES names %s, which has no go.mod", d))
			continue
		}
		paths = append(paths, m.module)
		goLines[m.goLine] = append(goLines[m.goLine], d)
		toolchains[m.toolchain] = append(toolchains[m.toolchain], d)
	}
	if len(goLines) != 1 {
		problems = append(problems, fmt.Sprintf("the modules' go lines differ: %v", goLines))
	}
	if len(toolchains) != 1 {
		problems = append(problems, fmt.Sprintf("the modules' toolchain lines differ: %v", toolchains))
	}
	// The library's module, MODULES' first, is the reference the others are held to.
	var goLine, toolchain string
	if len(dirs) > 0 {
		goLine, toolchain = mods[dirs[0]].goLine, mods[dirs[0]].toolchain
	}
	if table, err := moduleTable(devDoc); err != nil {
		problems = append(problems, "docs/development.md: "+err.Error())
	} else {
		slices.Sort(table)
		slices.Sort(paths)
		if !slices.Equal(table, paths) {
			problems = append(problems, fmt.Sprintf("docs/development.md's module table lists %v; the go.mod files of MODULES are %v", table, paths))
		}
	}
	release := minor(goLine)
	supported := release + " and " + next(release)
	for _, c := range []struct{ file, text, pattern, want string }{
		{"docs/development.md", devDoc, "every\\s+module's\\s+`go`\\s+line\\s+is\\s+`([^`]+)`", goLine},
		{"docs/development.md", devDoc, "`toolchain`\\s+line\\s+is\\s+`([^`]+)`", toolchain},
		{"docs/development.md", devDoc, `today\s+(\d+\.\d+\s+and\s+\d+\.\d+)`, supported},
		{"docs/development.md", devDoc, `Go\s+(\d+\.\d+)\s+or\s+newer`, release},
		{"README.md", readme, `Go\s+(\d+\.\d+\s+and\s+\d+\.\d+)`, supported},
	} {
		m := regexp.MustCompile(c.pattern).FindStringSubmatch(c.text)
		switch {
		case m == nil:
			problems = append(problems, fmt.Sprintf("%s no longer says %q", c.file, c.pattern))
		case strings.Join(strings.Fields(m[1]), " ") != c.want:
			problems = append(problems, fmt.Sprintf("%s says %q where the go.mod files say %q", c.file, m[1], c.want))
		}
	}
	if toolchain != "" && minor(toolchain) != release && minor(toolchain) != next(release) {
		problems = append(problems, fmt.Sprintf("the toolchain %s is not of a supported release (%s)", toolchain, supported))
	}
	return problems
}

// TestGoVersionsAgree reads every module's go.mod (the Makefile's MODULES) and checks that they
// share one go line and one toolchain line, that docs/development.md's module table names each
// module, and that it and the README promise the releases that the go line allows.
func TestGoVersionsAgree(t *testing.T) {
	root := moduleRoot(t)
	dirs, err := makeModules(readFile(t, filepath.Join(root, "Makefile")))
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]goMod{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(root, d, "go.mod"))
		if err != nil {
			continue // versionProblems names it
		}
		m, err := parseGoMod(string(b))
		if err != nil {
			t.Fatalf("%s/go.mod: %v", d, err)
		}
		mods[d] = m
	}
	for _, p := range versionProblems(mods, dirs, readFile(t, filepath.Join(root, "docs", "development.md")),
		readFile(t, filepath.Join(root, "README.md"))) {
		t.Error(p)
	}
}
