package guard_test

import (
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestOptionsOfTheOtherPackageDoNotCompile: a guard option passed to events.NewLog, or an events
// option passed to guard.New, is a type error, not a run-time refusal. The same sources with
// each package's own options type-check, so the harness itself is shown to work.
func TestOptionsOfTheOtherPackageDoNotCompile(t *testing.T) {
	t.Parallel()
	files := typecheck.Load(t, "github.com/cassdedup/cassdedup/guard", "github.com/cassdedup/cassdedup/events", "time")
	const head = "package main\n\nimport (\n\t\"time\"\n\n\t\"github.com/cassdedup/cassdedup/events\"\n\t\"github.com/cassdedup/cassdedup/guard\"\n)\n\n" +
		"var _ = time.Hour\n\n"
	own := head + "func main() {\n\tguard.New(nil, guard.WithRetention(time.Hour))\n\tevents.NewLog(nil, events.WithParts(8))\n}\n"
	if errs := files.Check(t, own); len(errs) != 0 {
		t.Fatalf("each package's own options do not type-check: %v", errs)
	}
	for name, call := range map[string]string{
		"guard option to events.NewLog": "events.NewLog(nil, guard.WithRetention(time.Hour))",
		"events option to guard.New":    "guard.New(nil, events.WithParts(8))",
		"shared-looking option":         "events.NewLog(nil, guard.WithKeyspace(\"ks\"))",
	} {
		errs := files.Check(t, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, call, errs)
		}
	}
}
