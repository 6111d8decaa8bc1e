package promobs_test

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/typecheck"
)

// TestBucketsDoNotCompileWithACollector: WithBuckets passed to a collector, which has no
// histogram, is a type error, not a refusal at run time. New with it, and every constructor
// with WithConstLabels, type-check, so the harness itself is shown to work.
func TestBucketsDoNotCompileWithACollector(t *testing.T) {
	t.Parallel()
	typecheck.Rejects(t, []string{"github.com/cassdedup/cassdedup/metrics/promobs"}, []string{
		"promobs.New(promobs.WithBuckets([]float64{1}), promobs.WithConstLabels(nil))",
		"promobs.NewRelayCollector(\"r\", promobs.WithConstLabels(nil))",
		"promobs.NewLogCollector(\"l\", nil, promobs.WithConstLabels(nil))",
		"promobs.NewClockCollector(\"c\", nil, promobs.WithConstLabels(nil))",
	}, map[string]string{
		"relay collector": "promobs.NewRelayCollector(\"r\", promobs.WithBuckets([]float64{1}))",
		"log collector":   "promobs.NewLogCollector(\"l\", nil, promobs.WithBuckets([]float64{1}))",
		"clock collector": "promobs.NewClockCollector(\"c\", nil, promobs.WithBuckets([]float64{1}))",
	})
}
