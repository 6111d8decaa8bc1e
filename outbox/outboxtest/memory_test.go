package outboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/cassdedup/cassdedup/outbox"
)

// memory is a destination in memory: one queue in publication order.
type memory struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every publication
	msgs    []outbox.Message
	read    int
}

func newMemory() *memory { return &memory{changed: make(chan struct{})} }

// Publish keeps copies of msgs, all or none, unless ctx has ended.
func (m *memory) Publish(ctx context.Context, msgs []outbox.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range msgs {
		x.Payload, x.Headers = bytes.Clone(x.Payload), maps.Clone(x.Headers)
		m.msgs = append(m.msgs, x)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	return nil
}

// Receive returns the next n messages once they are there.
func (m *memory) Receive(ctx context.Context, n int) ([]outbox.Message, error) {
	for {
		m.mu.Lock()
		if len(m.msgs)-m.read >= n {
			out := m.msgs[m.read : m.read+n]
			m.read += n
			m.mu.Unlock()
			return out, nil
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var errFull = errors.New("memory: destination full")

// TestMemoryPublisher runs the suite on the in-memory publisher.
func TestMemoryPublisher(t *testing.T) {
	TestPublisher(t, func(t *testing.T) Setup {
		m := newMemory()
		return Setup{
			Publisher: m,
			Receive:   m.Receive,
			Refused:   outbox.PublisherFunc(func(context.Context, []outbox.Message) error { return errFull }),
			Stalled: outbox.PublisherFunc(func(ctx context.Context, _ []outbox.Message) error {
				<-ctx.Done()
				return fmt.Errorf("memory: stalled: %w", ctx.Err())
			}),
			TotalOrder: true,
		}
	})
}

// TestMismatchNamesTheField: each way a message can arrive changed is named.
func TestMismatchNamesTheField(t *testing.T) {
	m := outbox.Message{ID: "i", Type: "t", Key: "k", Sequence: 1, Payload: []byte{0, 1}, Headers: map[string]string{"h": "\xff"}}
	for want, change := range map[string]func(*outbox.Message){
		"":         func(*outbox.Message) {},
		"type":     func(g *outbox.Message) { g.Type = "u" },
		"sequence": func(g *outbox.Message) { g.Sequence = 2 },
		"key":      func(g *outbox.Message) { g.Key = "" },
		"payload":  func(g *outbox.Message) { g.Payload = []byte{0} },
		"headers":  func(g *outbox.Message) { g.Headers = map[string]string{"h": "\ufffd"} },
	} {
		g := m
		change(&g)
		got := mismatch(m, g)
		if want == "" && got != "" || want != "" && !bytes.HasPrefix([]byte(got), []byte(want)) {
			t.Errorf("change of %q: mismatch says %q", want, got)
		}
	}
}
