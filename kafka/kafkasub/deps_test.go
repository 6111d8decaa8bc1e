package kafkasub_test

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/depcheck"
)

// TestImportsNothingOfTheOutbox: the consumer adapter is the guard's; it reads the header names
// from kafka/header, so a consumer's build holds neither the outbox nor the publisher module.
func TestImportsNothingOfTheOutbox(t *testing.T) {
	const repo = "github.com/cassdedup/cassdedup/"
	for _, p := range depcheck.Imported(t, []string{"."}, repo+"outbox", repo+"kafka/kafkapub") {
		t.Errorf("kafkasub imports %s", p)
	}
}
