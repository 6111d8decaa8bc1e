package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/testnode"
)

// t0 is the start of the fixed clock of the tests that spread messages over hours.
var t0 = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func newGuard(t *testing.T, opts ...guard.Option) *guard.Guard {
	t.Helper()
	session, ks := testnode.NewSession(t)
	g, err := guard.New(session, append([]guard.Option{guard.WithKeyspace(ks)}, opts...)...)
	require.NoError(t, err)
	return g
}

// effects counts what handlers did, per message id.
type effects struct {
	mu                      sync.Mutex
	runs, applied, failures map[string]int
}

func (e *effects) run(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs[id]++
	return e.runs[id]
}

func (e *effects) fail(id string) {
	e.mu.Lock()
	e.failures[id]++
	e.mu.Unlock()
}

func (e *effects) apply(id string) {
	e.mu.Lock()
	e.applied[id]++
	e.mu.Unlock()
}

// TestGuardReplayedStreamTakesEffectOnce replays 10,000 messages with 30% duplicates, a third
// of them delivered to two consumers at once; every tenth message's handler fails once and
// every 500th always fails. Every message's effect must happen exactly once, and the always
// failing ones must be reported as poison after exactly MaxAttempts handler runs.
//
// It is not parallel, so every goroutine that starts during it is its own and must have ended.
func TestGuardReplayedStreamTakesEffectOnce(t *testing.T) {
	const messages, maxAttempts, consumers = 10000, 3, 24
	g := newGuard(t, guard.WithMaxAttempts(maxAttempts))
	ctx := context.Background()
	fx := &effects{runs: map[string]int{}, applied: map[string]int{}, failures: map[string]int{}}
	failsOnce := func(i int) bool { return i%10 == 3 }
	poison := func(i int) bool { return i%500 == 7 }
	handler := func(_ context.Context, m guard.Message) error {
		var i int
		fmt.Sscanf(m.ID, "msg-%d", &i)
		if n := fx.run(m.ID); poison(i) || (failsOnce(i) && n == 1) {
			fx.fail(m.ID)
			return errors.New("handler failed")
		}
		fx.apply(m.ID)
		return nil
	}
	_, err := g.Process(ctx, guard.Message{Scope: guard.Scope{Group: "g", Topic: "warm"}, ID: "up"}, handler)
	require.NoError(t, err) // the session's connections are up before the snapshot
	running := goleak.IgnoreCurrent()

	var outcomes [6]atomic.Int64
	var poisoned sync.Map
	deliver := func(m guard.Message) {
		out := redeliver(t, ctx, g, m, handler, "handler failed", func(o guard.Outcome) { outcomes[o].Add(1) })
		if out == guard.Poison {
			poisoned.Store(m.ID, true)
		}
	}
	type delivery struct {
		m      guard.Message
		copies int // delivered to this many consumers at once
	}
	stream := make(chan delivery, 128)
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range stream {
				var pair sync.WaitGroup
				for range d.copies {
					pair.Add(1)
					go func() { defer pair.Done(); deliver(d.m) }()
				}
				pair.Wait()
			}
		}()
	}
	var duplicates []delivery
	for i := range messages {
		m := guard.Message{Scope: guard.Scope{Group: "billing", Topic: "payments", Partition: int32(i % 4)},
			ID: fmt.Sprintf("msg-%d", i), Payload: []byte(fmt.Sprintf("body-%d", i))}
		switch {
		case i%10 < 1: // 10%: two consumers at once
			stream <- delivery{m, 2}
		case i%10 < 3: // 20%: redelivered later
			stream <- delivery{m, 1}
			duplicates = append(duplicates, delivery{m, 1})
		default:
			stream <- delivery{m, 1}
		}
		if len(duplicates) > 200 {
			for _, d := range duplicates {
				stream <- d
			}
			duplicates = duplicates[:0]
		}
	}
	for _, d := range duplicates {
		stream <- d
	}
	close(stream)
	wg.Wait()

	for i := range messages {
		id := fmt.Sprintf("msg-%d", i)
		if poison(i) {
			_, reported := poisoned.Load(id)
			require.True(t, reported, "%s reported as poison", id)
			require.Equal(t, maxAttempts, fx.failures[id], "%s ran exactly MaxAttempts times", id)
			require.Zero(t, fx.applied[id])
			continue
		}
		require.Equal(t, 1, fx.applied[id], "%s took effect once", id)
		if failsOnce(i) {
			require.Equal(t, 1, fx.failures[id], "%s failed once", id)
		}
	}
	t.Logf("outcomes: processed %d, duplicate %d, in progress %d, failed %d, poison %d",
		outcomes[guard.Processed].Load(), outcomes[guard.Duplicate].Load(), outcomes[guard.InProgress].Load(),
		outcomes[guard.Failed].Load(), outcomes[guard.Poison].Load())
	require.Positive(t, outcomes[guard.Duplicate].Load())
	goleak.VerifyNone(t, append(leakcheck.DriverGoroutines(), running)...)
}

func TestGuardFailedHandlerLeavesMessageForRedelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t, guard.WithMaxAttempts(2))
	m := guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "m1", Payload: []byte("a")}
	boom := errors.New("boom")
	out, err := g.Process(ctx, m, func(context.Context, guard.Message) error { return boom })
	require.Equal(t, guard.Failed, out)
	require.ErrorIs(t, err, boom)
	runs := 0
	out, err = g.Process(ctx, m, func(context.Context, guard.Message) error { runs++; return nil })
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out, "a failed handler did not mark the message")
	out, err = g.Process(ctx, m, func(context.Context, guard.Message) error { runs++; return nil })
	require.NoError(t, err)
	require.Equal(t, guard.Duplicate, out)
	require.Equal(t, 1, runs)

	m.Payload = []byte("b")
	out, err = g.Process(ctx, m, func(context.Context, guard.Message) error { return nil })
	require.ErrorIs(t, err, guard.ErrMessageReuse)
	require.Equal(t, guard.Failed, out)

	p := guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "poison"}
	for range 2 {
		out, err = g.Process(ctx, p, func(context.Context, guard.Message) error { return boom })
	}
	require.Equal(t, guard.Poison, out)
	var pe *guard.PoisonError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, boom)
	require.Equal(t, "boom", pe.LastError)
	out, err = g.Process(ctx, p, func(context.Context, guard.Message) error { t.Fatal("ran"); return nil })
	require.Equal(t, guard.Poison, out, "poison is remembered")
	require.ErrorIs(t, err, guard.ErrPoison)
}

func TestGuardProcessedIDsListsScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testnode.NewClock(t0)
	g := newGuard(t, guard.WithClock(clock.Now), guard.WithoutClockCheck(), guard.WithRetention(24*time.Hour))
	scope := guard.Scope{Group: "g", Topic: "t", Partition: 2}
	want := map[string]bool{}
	for i := range 30 {
		id := fmt.Sprint("id-", i)
		want[id] = true
		clock.Set(t0.Add(time.Duration(i) * time.Hour)) // spread over 30 hour buckets
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: id}, func(context.Context, guard.Message) error { return nil })
		require.NoError(t, err)
	}
	_, err := g.Process(ctx, guard.Message{Scope: guard.Scope{Group: "g", Topic: "t", Partition: 3}, ID: "other"},
		func(context.Context, guard.Message) error { return nil })
	require.NoError(t, err)
	got := map[string]bool{}
	require.NoError(t, g.ProcessedIDs(ctx, scope, func(id string) error { got[id] = true; return nil }))
	require.Len(t, got, 25, "the last 24 h (25 hour buckets) of the scope, and no other scope")
	for id := range got {
		require.True(t, want[id])
	}
	stop := errors.New("stop")
	require.ErrorIs(t, g.ProcessedIDs(ctx, scope, func(string) error { return stop }), stop)
	require.ErrorIs(t, g.ProcessedIDs(ctx, guard.Scope{Topic: "t"}, func(string) error { return nil }), guard.ErrInvalidMessage)
}

func TestGuardBadInputGivesTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t, guard.WithMaxPayload(16))
	ok := func(context.Context, guard.Message) error { return nil }
	s := guard.Scope{Group: "g", Topic: "t"}
	cases := []struct {
		m    guard.Message
		want error
	}{
		{guard.Message{Scope: s}, guard.ErrInvalidMessage},
		{guard.Message{Scope: guard.Scope{Topic: "t"}, ID: "x"}, guard.ErrInvalidMessage},
		{guard.Message{Scope: guard.Scope{Group: "g"}, ID: "x"}, guard.ErrInvalidMessage},
		{guard.Message{Scope: guard.Scope{Group: "g", Topic: "t", Partition: -1}, ID: "x"}, guard.ErrInvalidMessage},
		{guard.Message{Scope: s, ID: strings.Repeat("x", 256)}, guard.ErrInvalidMessage},
		{guard.Message{Scope: s, ID: "\xc3"}, guard.ErrInvalidMessage},
		{guard.Message{Scope: s, ID: "x", Payload: make([]byte, 17)}, guard.ErrPayloadTooLarge},
	}
	for _, tc := range cases {
		out, err := g.Process(ctx, tc.m, ok)
		require.ErrorIs(t, err, tc.want, "%+v", tc.m.Scope)
		require.Equal(t, guard.Failed, out)
	}
	_, err := g.Process(ctx, guard.Message{Scope: s, ID: "x"}, nil)
	require.ErrorIs(t, err, guard.ErrInvalidOption)
	for _, o := range []guard.Option{guard.WithRetention(time.Second), guard.WithLease(time.Millisecond),
		guard.WithLease(30 * 24 * time.Hour), guard.WithMaxAttempts(0), guard.WithMaxPayload(0),
		guard.WithClock(nil), guard.WithKeyspace("a b"), guard.WithMessageTables("x", "-"),
		guard.WithConsistency(gocql.One), guard.WithSerialConsistency(gocql.SerialConsistency(0)),
		guard.WithBatchWindow(0), guard.WithBatchWindow(1500 * time.Millisecond), guard.WithBatchWindow(25 * time.Hour),
		guard.WithBatchBuckets(0), guard.WithBatchBuckets(1025), guard.WithBatchTable("no such;table")} {
		_, err := guard.New(&gocql.Session{}, o)
		require.ErrorIs(t, err, guard.ErrInvalidOption)
	}
}

func FuzzValidateMessage(f *testing.F) {
	f.Add("g", "t", int32(0), "id", 3)
	f.Add("", "t", int32(-1), "\xff", 0)
	f.Add("g", strings.Repeat("t", 256), int32(7), "id", 1<<23)
	f.Fuzz(func(t *testing.T, group, topic string, partition int32, id string, payload int) {
		if payload < 0 || payload > 8<<20 {
			return
		}
		err := guard.ValidateMessage(guard.Message{Scope: guard.Scope{Group: group, Topic: topic, Partition: partition},
			ID: id, Payload: make([]byte, payload)})
		if err != nil && !errors.Is(err, guard.ErrInvalidMessage) && !errors.Is(err, guard.ErrPayloadTooLarge) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && (group == "" || topic == "" || id == "" || partition < 0) {
			t.Fatal("accepted an invalid message")
		}
	})
}
