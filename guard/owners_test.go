package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestTwoOwnersOldNeverToldRunEachOnce is a consumer expelled from its group that has not
// noticed: owner a holds the scope at epoch 1 and goes on processing its in-flight messages on
// the fast path, never told; owner b is assigned the scope at epoch 2 and is delivered the
// same messages. The server fences a (its renewal fails, its fast path stops at its local
// deadline), and b's Own returns only once a's lease cannot admit anything more; b's warm-up
// then knows every message a recorded. Every message runs exactly once, through Process,
// ProcessBatch and ProcessPoll alike.
func TestTwoOwnersOldNeverToldRunEachOnce(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"Process", "ProcessBatch", "ProcessPoll"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			twoOwners(t, via)
		})
	}
}

func twoOwners(t *testing.T, via string) {
	const n = 200
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	scope := guard.Scope{Group: "g", Topic: "zombie", Partition: 4}
	own := guard.WithOwnership(3*time.Second, 1500*time.Millisecond)
	a, b := guardOn(t, session, ks, own), guardOn(t, session, ks, own)
	require.NoError(t, a.Own(ctx, scope, 1, newPreCheck(t, scope)))
	defer a.Disown(scope) // after the test: a is never told while it runs
	now := time.Now()
	msgs := make([]guard.Message, n)
	for i := range msgs {
		msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprint("m", i), Payload: []byte("x"), Time: now}
	}
	var mu sync.Mutex
	runs := map[string]int{}
	byA, byB := atomic.Int64{}, atomic.Int64{}
	handler := func(count *atomic.Int64) guard.Handler {
		return func(ctx context.Context, m guard.Message) error {
			time.Sleep(10 * time.Millisecond) // in flight for a while
			if ctx.Err() != nil {
				return ctx.Err() // past the lease it was admitted under: no effect
			}
			mu.Lock()
			runs[m.ID]++
			mu.Unlock()
			count.Add(1)
			return nil
		}
	}
	aCtx, stopA := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { consumeAll(t, aCtx, a, msgs, handler(&byA), via) })
	time.Sleep(300 * time.Millisecond) // a has records in flight
	require.NoError(t, b.Own(ctx, scope, 2, newPreCheck(t, scope)))
	defer b.Disown(scope)
	consumeAll(t, ctx, b, msgs, handler(&byB), via)
	stopA()
	wg.Wait()

	twice := 0
	for _, m := range msgs {
		if runs[m.ID] > 1 {
			twice++
		}
	}
	t.Logf("%s: %d messages, %d run by the old owner, %d by the new one, %d twice; old owner superseded %d, refused %d, recorded after its ownership ended %d",
		via, n, byA.Load(), byB.Load(), twice, a.Stats().Superseded+a.BatchStats().Superseded, a.Stats().NoLease,
		a.Stats().StaleEpoch+a.BatchStats().StaleEpoch)
	require.Zero(t, twice, "a message ran twice")
	require.Len(t, runs, n, "every message ran")
	require.Positive(t, byA.Load(), "the old owner ran messages before it was fenced")
	require.Positive(t, byB.Load(), "the new owner ran the rest")
	require.Equal(t, int64(1), a.Stats().Superseded, "the old owner's renewal found the scope taken")
}

// consumeAll delivers msgs to g, in polls of 10 with ProcessBatch or ProcessPoll (its handlers
// one at a time, so the old owner is still busy when the new one starts) or one by one with
// Process,
// each until it is processed or a duplicate, or until ctx ends. Refusals for want of a lease
// (lwt.ErrNoLease) and messages in progress elsewhere are delivered again.
func consumeAll(t *testing.T, ctx context.Context, g *guard.Guard, msgs []guard.Message, h guard.Handler, via string) {
	retryable := func(err error) bool {
		return err == nil || errors.Is(err, lwt.ErrNoLease) || errors.Is(err, lwt.ErrInProgress) || errors.Is(err, context.DeadlineExceeded)
	}
	for len(msgs) > 0 && ctx.Err() == nil {
		poll := msgs[:min(10, len(msgs))]
		var results []guard.BatchResult
		switch via {
		case "ProcessBatch", "ProcessPoll":
			var err error
			if via == "ProcessBatch" {
				results, err = g.ProcessBatch(ctx, poll, h)
			} else {
				results, err = g.ProcessPoll(ctx, poll, guard.ByKey(func(m guard.Message) string { return m.ID }, 1, h))
			}
			if !assert.NoError(t, err) {
				return
			}
		default:
			for _, m := range poll {
				out, err := g.Process(ctx, m, h)
				results = append(results, guard.BatchResult{Outcome: out, Err: err})
			}
		}
		var again []guard.Message
		for i, r := range results {
			if r.Outcome == guard.Processed || r.Outcome == guard.Duplicate {
				continue
			}
			if !assert.True(t, retryable(r.Err), "%s: %v: %v", poll[i].ID, r.Outcome, r.Err) {
				return
			}
			again = append(again, poll[i])
		}
		if len(again) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		msgs = append(again, msgs[len(poll):]...)
	}
}
