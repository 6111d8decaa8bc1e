package guard_test

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestOptionsOfTheOtherPackageDoNotCompile: a guard option passed to events.NewLog, or an events
// option passed to guard.New, is a type error, not a run-time refusal. The same sources with
// each package's own options type-check, so the harness itself is shown to work.
func TestOptionsOfTheOtherPackageDoNotCompile(t *testing.T) {
	t.Parallel()
	typecheck.Rejects(t, []string{"time", "github.com/cassdedup/cassdedup/events", "github.com/cassdedup/cassdedup/guard"}, []string{
		"guard.New(nil, guard.WithRetention(time.Hour))",
		"events.NewLog(nil, events.WithParts(8))",
	}, map[string]string{
		"guard option to events.NewLog": "events.NewLog(nil, guard.WithRetention(time.Hour))",
		"events option to guard.New":    "guard.New(nil, events.WithParts(8))",
		"shared-looking option":         "events.NewLog(nil, guard.WithKeyspace(\"ks\"))",
	})
}
