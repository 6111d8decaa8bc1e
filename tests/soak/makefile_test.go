package soak

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeSoakHonoursOUT: make soak OUT=dir puts everything it writes under dir, absolute or
// relative to the repository: the log, the JSON (SOAK_OUT) and the node's and broker's run
// directories. The JSON went to out/ whatever OUT said, and an absolute OUT was appended to the
// repository's path for the run directories. Only make's dry run: nothing starts.
func TestMakeSoakHonoursOUT(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	written := regexp.MustCompile(`(?:^|[\s'=])([^\s'=]*)/(soak\.json|soak\.log|soak-run)\b`)
	for _, out := range []string{t.TempDir(), "some/dir"} {
		cmd := exec.Command("make", "-n", "soak", "OUT="+out)
		cmd.Dir, cmd.Env = repo, ownEnv() // a make test above this one passes its own OUT down in MAKEFLAGS
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n soak OUT=%s: %v\n%s", out, err, b)
		}
		want := out
		if !filepath.IsAbs(out) {
			want = filepath.Join(repo, out)
		}
		seen := map[string]bool{}
		for _, m := range written.FindAllStringSubmatch(string(b), -1) {
			dir := m[1]
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(repo, dir) // make runs its commands in the repository
			}
			if dir != want {
				t.Errorf("OUT=%s: %s goes to %s", out, m[2], m[1])
			}
			seen[m[2]] = true
		}
		for _, f := range []string{"soak.json", "soak.log", "soak-run"} {
			if !seen[f] {
				t.Errorf("OUT=%s: make soak names no %s\n%s", out, f, b)
			}
		}
	}
}

// ownEnv is the environment without what a make running this test passes to the makes below it.
func ownEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "MAKEOVERRIDES" {
			env = append(env, kv)
		}
	}
	return env
}
