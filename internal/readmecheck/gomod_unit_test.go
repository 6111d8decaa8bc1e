package readmecheck

import (
	"strings"
	"testing"
)

// TestVersionProblemsFindEachDisagreement: a consistent set passes, and each way of breaking it
// is found.
func TestVersionProblemsFindEachDisagreement(t *testing.T) {
	const dev = "# Development\n\n## The modules\n\n| module | holds |\n| --- | --- |\n| `m` | lib |\n| `m/a` | a |\n\n## Requirements\n\n" +
		"- Go 1.26 or newer.\n- Go: today 1.26 and 1.27; every module's `go` line is `1.26.0` and its `toolchain` line is `go1.27.3`.\n"
	const readme = "Go 1.26 and 1.27, Cassandra 5.0"
	good := func() map[string]goMod {
		return map[string]goMod{".": {"m", "1.26.0", "go1.27.3"}, "a": {"m/a", "1.26.0", "go1.27.3"}}
	}
	if p := versionProblems(good(), []string{".", "a"}, dev, readme); len(p) != 0 {
		t.Fatalf("a consistent set: %v", p)
	}
	for name, c := range map[string]struct {
		mods         func(map[string]goMod)
		dirs         []string
		dev, readme  string
		wantFragment string
	}{
		"go line":            {mods: func(m map[string]goMod) { m["a"] = goMod{"m/a", "1.25.0", "go1.27.3"} }, wantFragment: "go lines differ"},
		"toolchain":          {mods: func(m map[string]goMod) { m["a"] = goMod{"m/a", "1.26.0", ""} }, wantFragment: "toolchain lines differ"},
		"missing go.mod":     {dirs: []string{".", "a", "b"}, wantFragment: "has no go.mod"},
		"table":              {dev: strings.Replace(dev, "| `m/a` | a |\n", "", 1), wantFragment: "module table"},
		"readme promise":     {readme: "Go 1.25 and 1.26", wantFragment: "README.md says"},
		"development go":     {dev: strings.Replace(dev, "`1.26.0`", "`1.25.0`", 1), wantFragment: "docs/development.md says \"1.25.0\""},
		"development toolch": {dev: strings.Replace(dev, "`go1.27.3`", "`go1.26.8`", 1), wantFragment: "\"go1.26.8\""},
		"old toolchain": {mods: func(m map[string]goMod) {
			m["."], m["a"] = goMod{"m", "1.26.0", "go1.25.9"}, goMod{"m/a", "1.26.0", "go1.25.9"}
		}, dev: strings.Replace(dev, "go1.27.3", "go1.25.9", 1), wantFragment: "not of a supported release"},
	} {
		mods, dirs, d, r := good(), []string{".", "a"}, dev, readme
		if c.mods != nil {
			c.mods(mods)
		}
		if c.dirs != nil {
			dirs = c.dirs
		}
		if c.dev != "" {
			d = c.dev
		}
		if c.readme != "" {
			r = c.readme
		}
		p := versionProblems(mods, dirs, d, r)
		if !strings.Contains(strings.Join(p, "\n"), c.wantFragment) {
			t.Errorf("%s: want a problem with %q, got %q", name, c.wantFragment, p)
		}
	}
}
