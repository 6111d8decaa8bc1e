package bloom_test

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestOptionsOfAnotherConstructorDoNotCompile: a window option (retention, generations, clock)
// passed to New, whose Filter never forgets, and the warm-up limit passed to New or NewRotating
// are type errors, not options refused at run time. Each constructor's own options type-check,
// so the harness itself is shown to work.
func TestOptionsOfAnotherConstructorDoNotCompile(t *testing.T) {
	t.Parallel()
	typecheck.Rejects(t, []string{"time", "github.com/cassdedup/cassdedup/bloom"}, []string{
		"bloom.New(bloom.WithExpectedItems(10), bloom.WithShards(1))",
		"bloom.NewRotating(bloom.WithExpectedItems(10), bloom.WithRetention(time.Hour), bloom.WithClock(time.Now))",
		"bloom.NewPreCheck(\"s\", bloom.WithExpectedItems(10), bloom.WithGenerations(2), bloom.WithWarmUpLimit(5))",
	}, map[string]string{
		"retention to New":          "bloom.New(bloom.WithRetention(time.Hour))",
		"clock to New":              "bloom.New(bloom.WithClock(time.Now))",
		"warm-up limit to New":      "bloom.New(bloom.WithWarmUpLimit(5))",
		"warm-up limit to Rotating": "bloom.NewRotating(bloom.WithWarmUpLimit(5))",
	})
}
