package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/outbox"
)

// testEmptyBatch: a Publish of no messages succeeds (the relay never sends one, a caller may).
func testEmptyBatch(t *testing.T, s Setup) {
	publish(t, s.Publisher, nil)
}

// testOrderWithinOperation: a full publish batch (outbox.DefaultPublishBatch messages) of 50
// operations of 10 events, each operation's events under its own key, arrives whole, each
// operation's events in staging order.
func testOrderWithinOperation(t *testing.T, s Setup) {
	var sent []outbox.Message
	for op := range outbox.DefaultPublishBatch / 10 {
		sent = append(sent, run(t, fmt.Sprintf("op-%d", op), 10, fmt.Sprintf("order-%d", op))...)
	}
	publish(t, s.Publisher, sent)
	got := receive(t, s, len(sent))
	checkIntact(t, sent, got, 1)
	checkOrder(t, s.TotalOrder, sent, got)
}

// testOrderAcrossCalls: the events of one key published by two Publish calls, one after the
// other, arrive in the calls' order.
func testOrderAcrossCalls(t *testing.T, s Setup) {
	a, b := run(t, "a", 10, "k-a"), run(t, "b", 10, "k-b")
	first := append(append([]outbox.Message{}, a[:5]...), b[:5]...)
	second := append(append([]outbox.Message{}, a[5:]...), b[5:]...)
	publish(t, s.Publisher, first)
	publish(t, s.Publisher, second)
	got := receive(t, s, 20)
	sent := append(first, second...)
	checkIntact(t, sent, got, 1)
	checkOrder(t, s.TotalOrder, sent, got)
}

// testIDsAndHeadersIntact: ids, types, sequences, keys, header names and values (not UTF-8,
// NUL bytes, empty, the outbox's most headers) and payloads (every byte value, empty) arrive as
// published.
func testIDsAndHeadersIntact(t *testing.T, s Setup) {
	sent := run(t, "ops/ключ 1", 4, "")
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	sent[0].Key, sent[0].Type = "clé 🔑 with spaces", "order.placed"
	sent[0].Payload = every
	sent[0].Headers = map[string]string{"tenant": "t1", "trace-id": "00-abc-01", "bin": "\xff\xfe\x00\x01", "empty": "", "nom é": "valeur ✓"}
	sent[1].Payload = nil
	sent[1].Headers = map[string]string{}
	for i := range outbox.MaxHeaders {
		sent[1].Headers[fmt.Sprintf("h%02d", i)] = strings.Repeat("v", i)
	}
	sent[2].Payload = []byte("\x00")
	sent[2].Type = "typ\u00e9.\u4e8b\u4ef6"
	sent[3].Payload = []byte(`{"json":true}`)
	publish(t, s.Publisher, sent)
	checkIntact(t, sent, receive(t, s, len(sent)), 1)
}

// testRepublishKeepsIDs: a publication repeated (a relay that crashed before marking) arrives
// again with the same ids, keys and payloads, for the consumer to dedup on.
func testRepublishKeepsIDs(t *testing.T, s Setup) {
	sent := append(run(t, "o-1", 3, "o-1"), run(t, "o-2", 2, "")...)
	publish(t, s.Publisher, sent)
	publish(t, s.Publisher, sent)
	checkIntact(t, sent, receive(t, s, 2*len(sent)), 2)
}

// testErrorsReturned: a publication that the destination refuses returns an error.
func testErrorsReturned(t *testing.T, s Setup) {
	ctx, cancel := context.WithTimeout(context.Background(), RefusedTimeout)
	defer cancel()
	took, err := timed(ctx, s.Refused, run(t, "refused", 3, "k"))
	if err == nil {
		t.Fatalf("a refused publication reported success after %v", took)
	}
	if ctx.Err() != nil {
		t.Fatalf("a refused publication took more than %v to fail: %v", RefusedTimeout, err)
	}
	t.Logf("refused after %v: %v", took, err)
}

// testCancelledContext: a Publish under a cancelled context returns context.Canceled promptly.
func testCancelledContext(t *testing.T, s Setup) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, p := range map[string]outbox.Publisher{"Publisher": s.Publisher, "Stalled": s.Stalled} {
		took, err := timed(ctx, p, run(t, "cancelled-"+name, 3, "k"))
		checkEnded(t, name, err, took, 0, context.Canceled)
	}
}

// testExpiredDeadline: a Publish under a context whose deadline passed returns
// context.DeadlineExceeded promptly.
func testExpiredDeadline(t *testing.T, s Setup) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for name, p := range map[string]outbox.Publisher{"Publisher": s.Publisher, "Stalled": s.Stalled} {
		took, err := timed(ctx, p, run(t, "expired-"+name, 3, "k"))
		checkEnded(t, name, err, took, 0, context.DeadlineExceeded)
	}
}

// testDeadlineDuringPublish: a Publish to a stalled destination ends with
// context.DeadlineExceeded promptly once its deadline passes: the relay's lease bounds it.
func testDeadlineDuringPublish(t *testing.T, s Setup) {
	const after = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), after)
	defer cancel()
	took, err := timed(ctx, s.Stalled, run(t, "deadline", 3, "k"))
	checkEnded(t, "Stalled", err, took, after, context.DeadlineExceeded)
}

// testCancelDuringPublish: a Publish to a stalled destination ends with context.Canceled
// promptly once its context is cancelled (a relay stopping).
func testCancelDuringPublish(t *testing.T, s Setup) {
	const after = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(after, cancel)
	defer stop.Stop()
	took, err := timed(ctx, s.Stalled, run(t, "cancel", 3, "k"))
	checkEnded(t, "Stalled", err, took, after, context.Canceled)
}

// checkEnded checks that a Publish ended by its context returned want within Prompt of after.
func checkEnded(t *testing.T, name string, err error, took, after time.Duration, want error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: Publish reported success under an ended context (%v)", name, want)
	case !errors.Is(err, want):
		t.Errorf("%s: Publish returned %v, which is not %v", name, err, want)
	}
	if took > after+Prompt {
		t.Errorf("%s: Publish took %v, more than %v after its context ended", name, took, Prompt)
	}
}

// testLargePayloads: the largest single event and the largest run of outbox.MaxEvents events
// that the outbox lets a run stage (Setup.MaxSize) arrive whole.
func testLargePayloads(t *testing.T, s Setup) {
	limit := s.MaxSize
	if limit == 0 {
		limit = outbox.DefaultMaxSize
	}
	// The outbox counts a payload as its base64 size plus 64 bytes and the type's and key's.
	one := run(t, "big", 1, "big")
	one[0].Payload = pattern((limit - 64 - len(one[0].Type) - len(one[0].Key)) * 3 / 4)
	many := run(t, "many", outbox.MaxEvents, "many")
	for i := range many {
		many[i].Payload = pattern((limit/outbox.MaxEvents - 64 - len(many[i].Type) - len(many[i].Key)) * 3 / 4)
	}
	sent := append(one, many...)
	publish(t, s.Publisher, one)
	publish(t, s.Publisher, many)
	got := receive(t, s, len(sent))
	checkIntact(t, sent, got, 1)
	checkOrder(t, s.TotalOrder, sent, got)
}

// pattern returns n bytes that differ from position to position, so a cut or a shift shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// testConcurrentPublishers: 16 goroutines publish operations at once through one publisher (as
// several relays of one process may): every event arrives once, each operation in order.
func testConcurrentPublishers(t *testing.T, s Setup) {
	const workers, ops, events = 16, 4, 5
	ctx, cancel := context.WithTimeout(context.Background(), ReceiveTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sent []outbox.Message
		errs []error
	)
	for w := range workers {
		batches := make([][]outbox.Message, ops)
		for o := range batches {
			op := fmt.Sprintf("w%d-op%d", w, o)
			batches[o] = run(t, op, events, op)
		}
		wg.Go(func() {
			for _, b := range batches {
				err := s.Publisher.Publish(ctx, b)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					sent = append(sent, b...)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent publications failed: %v", err)
	}
	got := receive(t, s, workers*ops*events)
	checkIntact(t, sent, got, 1)
	checkOrder(t, false, sent, got) // the goroutines' calls have no order among them
}
