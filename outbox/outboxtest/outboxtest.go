package outboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/outbox"
)

// Setup is one destination of a sub-test and the ways to reach it.
type Setup struct {
	// Publisher publishes to the destination. A publisher shared by several relays is called
	// from several goroutines at once: it must be safe for that.
	Publisher outbox.Publisher
	// Receive returns the next n messages that reached the destination, in the order a consumer
	// of it sees them, decoded back into outbox.Message: ID, Type, Sequence, Payload and
	// Headers (the event's own, without the adapter's) are required; Key when the event had
	// one; StagedAt when the adapter carries it (zero otherwise; compared to the millisecond).
	// It returns an error when ctx ends first. It is called from the sub-test's goroutine.
	Receive func(ctx context.Context, n int) ([]outbox.Message, error)
	// Refused publishes to a destination of the same kind that refuses what it is sent (a
	// topic that does not exist, a record over the destination's limit, a missing
	// permission): its Publish must return an error, not report success.
	Refused outbox.Publisher
	// Stalled publishes to a destination that accepts the connection and never answers (a
	// broker stuck in a pause): its Publish must end when its context does.
	Stalled outbox.Publisher
	// TotalOrder says the destination keeps one order over all messages (a single queue),
	// which the suite then checks; otherwise it checks the order of each event key.
	TotalOrder bool
	// MaxSize is the largest run, in bytes as the outbox counts them, that the publisher must
	// carry: the outbox.WithMaxSize of the relays it serves. Zero means outbox.DefaultMaxSize.
	MaxSize int
}

// Factory makes a fresh destination for the sub-test t and registers its clean-up with
// t.Cleanup. It may fail t (require, t.Fatal).
type Factory func(t *testing.T) Setup

// Bounds of the suite.
const (
	// ReceiveTimeout bounds a sub-test's wait for the messages it published.
	ReceiveTimeout = 60 * time.Second
	// Prompt is how long after its context ends a Publish may take to return.
	Prompt = 5 * time.Second
	// RefusedTimeout bounds a Publish to the Refused destination: it must fail before.
	RefusedTimeout = 60 * time.Second
)

// TestPublisher runs the conformance suite against the publishers that newSetup makes, one
// sub-test per property, each on a fresh Setup. A publisher that passes it can serve a Relay.
func TestPublisher(t *testing.T, newSetup Factory) {
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s Setup)
	}{
		{"EmptyBatch", testEmptyBatch},
		{"OrderWithinOperation", testOrderWithinOperation},
		{"OrderAcrossCalls", testOrderAcrossCalls},
		{"IDsAndHeadersIntact", testIDsAndHeadersIntact},
		{"RepublishKeepsIDs", testRepublishKeepsIDs},
		{"ErrorsReturned", testErrorsReturned},
		{"CancelledContext", testCancelledContext},
		{"ExpiredDeadline", testExpiredDeadline},
		{"DeadlineDuringPublish", testDeadlineDuringPublish},
		{"CancelDuringPublish", testCancelDuringPublish},
		{"LargePayloads", testLargePayloads},
		{"ConcurrentPublishers", testConcurrentPublishers},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t)
			if s.Publisher == nil || s.Receive == nil || s.Refused == nil || s.Stalled == nil {
				t.Fatal("outboxtest: the Setup needs Publisher, Receive, Refused and Stalled")
			}
			c.run(t, s)
		})
	}
}
