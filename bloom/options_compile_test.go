package bloom_test

import (
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestOptionsOfAnotherConstructorDoNotCompile: a window option (retention, generations, clock)
// passed to New, whose Filter never forgets, and the warm-up limit passed to New or NewRotating
// are type errors, not options refused at run time. Each constructor's own options type-check,
// so the harness itself is shown to work.
func TestOptionsOfAnotherConstructorDoNotCompile(t *testing.T) {
	t.Parallel()
	files := typecheck.Load(t, "github.com/cassdedup/cassdedup/bloom", "time")
	const head = "package main\n\nimport (\n\t\"time\"\n\n\t\"github.com/cassdedup/cassdedup/bloom\"\n)\n\n" +
		"var _ = time.Hour\n\n"
	own := head + "func main() {\n" +
		"\tbloom.New(bloom.WithExpectedItems(10), bloom.WithShards(1))\n" +
		"\tbloom.NewRotating(bloom.WithExpectedItems(10), bloom.WithRetention(time.Hour), bloom.WithClock(time.Now))\n" +
		"\tbloom.NewPreCheck(\"s\", bloom.WithExpectedItems(10), bloom.WithGenerations(2), bloom.WithWarmUpLimit(5))\n}\n"
	if errs := files.Check(t, own); len(errs) != 0 {
		t.Fatalf("each constructor's own options do not type-check: %v", errs)
	}
	for name, call := range map[string]string{
		"retention to New":          "bloom.New(bloom.WithRetention(time.Hour))",
		"clock to New":              "bloom.New(bloom.WithClock(time.Now))",
		"warm-up limit to New":      "bloom.New(bloom.WithWarmUpLimit(5))",
		"warm-up limit to Rotating": "bloom.NewRotating(bloom.WithWarmUpLimit(5))",
	} {
		errs := files.Check(t, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s: %s type-checks (errors: %v); it must not compile", name, call, errs)
		}
	}
}
