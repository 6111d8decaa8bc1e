package outboxtest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/outbox"
)

// run returns the n committed events of the operation (sub-test's name, op) as the relay would
// publish them: key is every event's key ("" for none).
func run(t *testing.T, op string, n int, key string) []outbox.Message {
	ns := t.Name()
	at := time.Now().UTC().Truncate(time.Millisecond)
	out := make([]outbox.Message, n)
	for i := range out {
		out[i] = outbox.Message{ID: outbox.EventID(ns, op, i), Namespace: ns, OpKey: op, Sequence: i, Fence: 1,
			Type: "outboxtest.event", Key: key, Payload: fmt.Appendf(nil, "%s/%d", op, i), StagedAt: at}
	}
	return out
}

// receive reads n messages from s's destination or fails t.
func receive(t *testing.T, s Setup, n int) []outbox.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReceiveTimeout)
	defer cancel()
	got, err := s.Receive(ctx, n)
	if err != nil {
		t.Fatalf("receive %d messages: %v", n, err)
	}
	if len(got) != n {
		t.Fatalf("receive %d messages: got %d", n, len(got))
	}
	return got
}

// publish publishes msgs under a ReceiveTimeout context or fails t.
func publish(t *testing.T, p outbox.Publisher, msgs []outbox.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReceiveTimeout)
	defer cancel()
	if err := p.Publish(ctx, msgs); err != nil {
		t.Fatalf("publish %d messages: %v", len(msgs), err)
	}
}

// checkIntact checks that got holds each message of sent exactly copies times, each as sent.
func checkIntact(t *testing.T, sent, got []outbox.Message, copies int) {
	t.Helper()
	want := make(map[string]outbox.Message, len(sent))
	for _, m := range sent {
		want[m.ID] = m
	}
	seen := make(map[string]int, len(sent))
	for _, g := range got {
		m, ok := want[g.ID]
		if !ok {
			t.Errorf("received id %q, which was not published", g.ID)
			continue
		}
		seen[g.ID]++
		if p := mismatch(m, g); p != "" {
			t.Errorf("message %q (sequence %d): %s", m.ID, m.Sequence, p)
		}
	}
	for id := range want {
		if seen[id] != copies {
			t.Errorf("message %q received %d times, want %d", id, seen[id], copies)
		}
	}
}

// mismatch says how g differs from the published m, or returns "".
func mismatch(m, g outbox.Message) string {
	switch {
	case g.Type != m.Type:
		return fmt.Sprintf("type %q, want %q", g.Type, m.Type)
	case g.Sequence != m.Sequence:
		return fmt.Sprintf("sequence %d, want %d", g.Sequence, m.Sequence)
	case m.Key != "" && g.Key != m.Key:
		return fmt.Sprintf("key %q, want %q", g.Key, m.Key)
	case !bytes.Equal(g.Payload, m.Payload):
		return fmt.Sprintf("payload of %d bytes differs from the %d published", len(g.Payload), len(m.Payload))
	case !maps.Equal(g.Headers, m.Headers):
		return fmt.Sprintf("headers %q, want %q", g.Headers, m.Headers)
	case !g.StagedAt.IsZero() && !g.StagedAt.Truncate(time.Millisecond).Equal(m.StagedAt.Truncate(time.Millisecond)):
		return fmt.Sprintf("staged at %v, want %v", g.StagedAt, m.StagedAt)
	}
	return ""
}

// checkOrder checks that got (each message of sent once) keeps sent's order: over all messages
// when total, else among the messages of each event key.
func checkOrder(t *testing.T, total bool, sent, got []outbox.Message) {
	t.Helper()
	keyOf := func(m outbox.Message) string {
		if total {
			return ""
		}
		return m.Key
	}
	wantOrder := map[string][]string{}
	for _, m := range sent {
		wantOrder[keyOf(m)] = append(wantOrder[keyOf(m)], m.ID)
	}
	gotOrder := map[string][]string{}
	for _, g := range got {
		gotOrder[keyOf(g)] = append(gotOrder[keyOf(g)], g.ID)
	}
	for k, ids := range wantOrder {
		if fmt.Sprint(gotOrder[k]) != fmt.Sprint(ids) {
			t.Errorf("key %q: received in the order %v, published in %v", k, gotOrder[k], ids)
		}
	}
}

// timed runs Publish and returns its error and how long it took.
func timed(ctx context.Context, p outbox.Publisher, msgs []outbox.Message) (time.Duration, error) {
	start := time.Now()
	err := p.Publish(ctx, msgs)
	return time.Since(start), err
}
