package outboxtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/outbox/outboxtest"
)

// newSetup is the Factory of a publisher that a webhook or broker adapter would replace with
// its own: here every field is a stand-in.
func newSetup(t *testing.T) outboxtest.Setup {
	var sent []outbox.Message
	return outboxtest.Setup{
		Publisher: outbox.PublisherFunc(func(ctx context.Context, msgs []outbox.Message) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			sent = append(sent, msgs...) // a real adapter sends them to its broker
			return nil
		}),
		Receive: func(ctx context.Context, n int) ([]outbox.Message, error) {
			got := sent[:min(n, len(sent))] // a real adapter consumes them back
			sent = sent[len(got):]
			return got, nil
		},
		Refused: outbox.PublisherFunc(func(context.Context, []outbox.Message) error { return errors.New("refused") }),
		Stalled: outbox.PublisherFunc(func(ctx context.Context, _ []outbox.Message) error {
			<-ctx.Done()
			return ctx.Err()
		}),
	}
}

// An adapter's test file runs the suite with its Factory:
//
//	func TestConformance(t *testing.T) { outboxtest.TestPublisher(t, newSetup) }
func ExampleTestPublisher() {
	var _ outboxtest.Factory = newSetup
}
