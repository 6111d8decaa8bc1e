package outbox

import (
	"testing"

	"github.com/cassdedup/cassdedup/internal/depcheck"
)

// TestImportsNothingOfTheGuard: the outbox and its test kit build without the consumer guard; a
// consumer of its events (kafka/kafkasub) lives beside the guard, not here.
func TestImportsNothingOfTheGuard(t *testing.T) {
	for _, p := range depcheck.Imported(t, []string{"./..."}, "github.com/cassdedup/cassdedup/guard") {
		t.Errorf("the outbox imports %s", p)
	}
}
