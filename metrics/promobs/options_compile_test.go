package promobs_test

import (
	"strings"
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestBucketsDoNotCompileWithACollector: WithBuckets passed to a collector, which has no
// histogram, is a type error, not a refusal at run time. New with it, and every constructor
// with WithConstLabels, type-check, so the harness itself is shown to work.
func TestBucketsDoNotCompileWithACollector(t *testing.T) {
	t.Parallel()
	files := typecheck.Load(t, "github.com/cassdedup/cassdedup/metrics/promobs")
	const head = "package main\n\nimport \"github.com/cassdedup/cassdedup/metrics/promobs\"\n\n"
	own := head + "func main() {\n" +
		"\tpromobs.New(promobs.WithBuckets([]float64{1}), promobs.WithConstLabels(nil))\n" +
		"\tpromobs.NewRelayCollector(\"r\", promobs.WithConstLabels(nil))\n" +
		"\tpromobs.NewLogCollector(\"l\", nil, promobs.WithConstLabels(nil))\n" +
		"\tpromobs.NewClockCollector(\"c\", nil, promobs.WithConstLabels(nil))\n}\n"
	if errs := files.Check(t, own); len(errs) != 0 {
		t.Fatalf("each constructor's own options do not type-check: %v", errs)
	}
	for _, call := range []string{
		"promobs.NewRelayCollector(\"r\", promobs.WithBuckets([]float64{1}))",
		"promobs.NewLogCollector(\"l\", nil, promobs.WithBuckets([]float64{1}))",
		"promobs.NewClockCollector(\"c\", nil, promobs.WithBuckets([]float64{1}))",
	} {
		errs := files.Check(t, head+"func main() {\n\t"+call+"\n}\n")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "cannot use") {
			t.Errorf("%s type-checks (errors: %v); it must not compile", call, errs)
		}
	}
}
