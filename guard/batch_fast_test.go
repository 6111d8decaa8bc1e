package guard_test

import (
	"context"
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

// TestProcessBatchFastPath: a poll of new messages of an owned scope runs every handler without
// a claim and is recorded without a Paxos round; its redelivery, to the same owner, to a new
// one or through Process, runs nothing. Eight goroutines delivering one poll at once to the
// owner run each handler once. A poll that mixes new and processed messages takes the fast path
// for the new ones only.
func TestProcessBatchFastPath(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	clock := testnode.NewClock(time.Now().Truncate(time.Second))
	scope := guard.Scope{Group: "g", Topic: "batch-fast", Partition: 4}
	g := defaultOwner(t, session, ks, clock, scope, 1)
	var mu sync.Mutex
	runs := map[string]int{}
	var claimed atomic.Int32
	h := func(ctx context.Context, m guard.Message) error {
		if _, ok := lwt.ClaimFromContext(ctx); ok {
			claimed.Add(1)
		}
		mu.Lock()
		defer mu.Unlock()
		runs[m.ID]++
		return nil
	}
	poll := func(prefix string, n int) []guard.Message {
		msgs := make([]guard.Message, n)
		for i := range msgs {
			msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprint(prefix, i), Payload: []byte("x"), Time: clock.Now()}
		}
		return msgs
	}
	outcomes := func(g *guard.Guard, msgs []guard.Message) map[guard.Outcome]int {
		res, err := g.ProcessBatch(ctx, msgs, h)
		require.NoError(t, err)
		n := map[guard.Outcome]int{}
		for _, r := range res {
			assert.NoError(t, r.Err)
			n[r.Outcome]++
		}
		return n
	}

	first := poll("a-", 150)
	require.Equal(t, map[guard.Outcome]int{guard.Processed: 150}, outcomes(g, first))
	require.Zero(t, claimed.Load(), "no handler ran under a claim")
	require.Zero(t, g.BatchStats().Claims, "no Paxos round")
	require.Equal(t, int64(150), g.Stats().FastPath)
	require.Equal(t, map[guard.Outcome]int{guard.Duplicate: 150}, outcomes(g, first))

	next := defaultOwner(t, session, ks, clock, scope, 2)
	require.Equal(t, map[guard.Outcome]int{guard.Duplicate: 150}, outcomes(next, first), "the new owner's warm-up read the records")
	out, err := next.Process(ctx, first[7], h)
	require.NoError(t, err)
	require.Equal(t, guard.Duplicate, out)

	mixed := append(poll("b-", 40), first[:40]...)
	require.Equal(t, map[guard.Outcome]int{guard.Processed: 40, guard.Duplicate: 40}, outcomes(next, mixed))
	require.Equal(t, int64(40), next.Stats().FastPath)

	concurrent := poll("c-", 60)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, err := next.ProcessBatch(ctx, concurrent, h)
			if !assert.NoError(t, err) {
				return
			}
			for _, r := range res {
				assert.Contains(t, []guard.Outcome{guard.Processed, guard.Duplicate, guard.InProgress}, r.Outcome, "%v", r.Err)
			}
		})
	}
	wg.Wait()
	require.Zero(t, claimed.Load())
	for id, n := range runs {
		require.Equal(t, 1, n, id)
	}
	require.Len(t, runs, 150+40+60)
}

// TestProcessBatchFastPathStoppedAfterItsWrite stops an owner right after a poll's record
// write and before its answer; the new owner's redelivery of the poll runs nothing.
func TestProcessBatchFastPathStoppedAfterItsWrite(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	clock := testnode.NewClock(time.Now().Truncate(time.Second))
	scope := guard.Scope{Group: "g", Topic: "batch-stop", Partition: 0}
	stop := newStopAt(t, lwt.ObservedWrite, "put")
	first := defaultOwner(t, session, ks, clock, scope, 1, guard.WithObserver(stop))
	msgs := make([]guard.Message, 30)
	for i := range msgs {
		msgs[i] = guard.Message{Scope: scope, ID: fmt.Sprint("m", i), Time: clock.Now()}
	}
	var effects atomic.Int32
	go func() {
		_, _ = first.ProcessBatch(ctx, msgs, func(context.Context, guard.Message) error { effects.Add(1); return nil })
	}()
	<-stop.reached
	t.Cleanup(func() { stop.Resume(); first.Disown(scope) })
	require.Equal(t, int32(30), effects.Load())

	next := defaultOwner(t, session, ks, clock, scope, 2)
	res, err := next.ProcessBatch(ctx, msgs, func(context.Context, guard.Message) error { effects.Add(1); return nil })
	require.NoError(t, err)
	for _, r := range res {
		require.Equal(t, guard.Duplicate, r.Outcome, "%v", r.Err)
	}
	require.Equal(t, int32(30), effects.Load())
}
