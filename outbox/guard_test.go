package outbox

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

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// guard is a consumer guard of e's keyspace whose handlers may stage events.
func (e *env) guard(t *testing.T, opts ...guard.Option) *guard.Guard {
	t.Helper()
	g, err := guard.New(e.session, append([]guard.Option{guard.WithKeyspace(e.ks),
		guard.WithCompletionColumns(ColumnName)}, opts...)...)
	require.NoError(t, err)
	return g
}

func orderMessage(id string) guard.Message {
	return guard.Message{Scope: guard.Scope{Group: "billing", Topic: "orders", Partition: 3}, ID: id,
		Payload: []byte("order " + id), Time: time.Now()}
}

// stageShipment is a saga step: it reacts to an order message by staging n events.
func (e *env) stageShipment(n int) guard.Handler {
	return func(ctx context.Context, m guard.Message) error {
		for i := range n {
			if err := e.box.Stage(ctx, Event{Type: "shipment.requested", Key: m.ID, Payload: []byte{byte(i)}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestGuardProcessStagesWithMessage: events staged by a handler of Guard.Process commit with the
// message's record and are published once, with ids derived from the message; a redelivery
// publishes nothing new.
func TestGuardProcessStagesWithMessage(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	g := e.guard(t)
	m := orderMessage("m-1")
	out, err := g.Process(ctx, m, e.stageShipment(2))
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)

	var cellBytes []byte
	require.NoError(t, e.session.Query(`SELECT outbox FROM "`+e.ks+`".processed_messages WHERE consumer_group = 'billing'
		AND topic = 'orders' AND partition = 3 AND message_id = 'm-1'`).Scan(&cellBytes))
	assert.NotEmpty(t, cellBytes, "the events are in the message's record")

	admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
	require.NoError(t, err)
	var pending []Pending
	require.NoError(t, admin.ListPending(ctx, time.Now().Add(-time.Minute), func(p Pending) error {
		pending = append(pending, p)
		return nil
	}))
	require.Len(t, pending, 1)
	assert.Equal(t, "processed_messages", pending[0].Record)
	assert.Equal(t, "committed", pending[0].Verdict)
	assert.Equal(t, 2, pending[0].Events)
	_, err = admin.Replay(ctx, pending[0].Namespace, "m-1", true)
	require.ErrorIs(t, err, ErrUnsupportedKey, "replay reads operations only")

	pub := &recorder{}
	r := e.relay(t, pub)
	st := drain(t, ctx, r)
	assert.Equal(t, 2, st.Published)
	require.Len(t, pub.msgs, 2)
	ns := GuardNamespace("billing", "orders", 3)
	for i, msg := range pub.msgs {
		assert.Equal(t, EventID(ns, "m-1", i), msg.ID)
		assert.Equal(t, ns, msg.Namespace)
		assert.Equal(t, "m-1", msg.OpKey)
		assert.Equal(t, "shipment.requested", msg.Type)
		assert.Equal(t, []byte{byte(i)}, msg.Payload)
	}

	out, err = g.Process(ctx, m, e.stageShipment(2))
	require.NoError(t, err)
	require.Equal(t, guard.Duplicate, out)
	drain(t, ctx, r)
	assert.Len(t, pub.msgs, 2, "a redelivery publishes nothing new")
}

// TestGuardFailedHandlerPublishesNothing: a handler that staged events and then failed (released,
// then poison) commits none; the redelivery that succeeds publishes its own events once.
func TestGuardFailedHandlerPublishesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	g := e.guard(t, guard.WithMaxAttempts(2))
	boom := errors.New("boom")
	failing := func(ctx context.Context, m guard.Message) error {
		if err := e.stageShipment(1)(ctx, m); err != nil {
			return err
		}
		return boom
	}
	out, err := g.Process(ctx, orderMessage("released"), failing)
	require.ErrorIs(t, err, boom)
	require.Equal(t, guard.Failed, out)
	poison := orderMessage("poison")
	for range 2 {
		out, err = g.Process(ctx, poison, failing)
		require.Error(t, err)
	}
	require.Equal(t, guard.Poison, out)

	pub := &recorder{}
	r := e.relay(t, pub)
	st := drain(t, ctx, r)
	assert.Empty(t, pub.msgs)
	assert.Equal(t, 3, st.Dropped, "the three failed runs' intents are dropped")

	out, err = g.Process(ctx, orderMessage("released"), e.stageShipment(1))
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	drain(t, ctx, r)
	require.Len(t, pub.msgs, 1)
	assert.Equal(t, EventID(GuardNamespace("billing", "orders", 3), "released", 0), pub.msgs[0].ID)
}

// TestGuardStagingConcurrentDeliveries: many goroutines deliver the same messages at once, on
// two guards; every message's handler commits once and the relay publishes its event once.
func TestGuardStagingConcurrentDeliveries(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	guards := []*guard.Guard{e.guard(t), e.guard(t)}
	const messages, deliveries = 12, 8
	var ran [messages]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, messages*deliveries)
	for d := range deliveries {
		for i := range messages {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := orderMessage(fmt.Sprintf("c-%d", i))
				// A delivery that finds another in progress is redelivered until it settles.
				for {
					out, err := guards[d%2].Process(ctx, m, func(ctx context.Context, m guard.Message) error {
						ran[i].Add(1)
						return e.stageShipment(1)(ctx, m)
					})
					if out == guard.InProgress {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %s: %w", m.ID, out, err)
					}
					return
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range ran {
		assert.EqualValues(t, 1, ran[i].Load(), "handler runs of c-%d", i)
	}

	pub := &recorder{}
	drain(t, ctx, e.relay(t, pub))
	seen := map[string]int{}
	for _, id := range pub.ids() {
		seen[id]++
	}
	require.Len(t, seen, messages)
	for i := range messages {
		assert.Equal(t, 1, seen[EventID(GuardNamespace("billing", "orders", 3), fmt.Sprintf("c-%d", i), 0)])
	}
}

// TestGuardBatchAndFastPathRefuseStaging: ProcessBatch's records carry no events, so Stage there
// fails with ErrNoCompletion (nothing staged, the message released); a guard with completion
// columns refuses the fast path.
func TestGuardBatchAndFastPathRefuseStaging(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	g := e.guard(t)
	results, err := g.ProcessBatch(ctx, []guard.Message{orderMessage("b-1")}, e.stageShipment(1))
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.ErrorIs(t, results[0].Err, ErrNoCompletion)
	require.ErrorIs(t, results[0].Err, ErrNoRun)
	assert.Equal(t, guard.Failed, results[0].Outcome)

	pre, err := bloom.NewPreCheck("billing/orders/3")
	require.NoError(t, err)
	require.ErrorIs(t, g.Own(ctx, orderMessage("x").Scope, 1, pre), guard.ErrInvalidOption)

	pub := &recorder{}
	drain(t, ctx, e.relay(t, pub))
	assert.Empty(t, pub.msgs)
}

// TestGuardFencedOffHandlerPublishesNothing: while a handler that staged an event still runs, an
// operator releases the message and another guard processes it; the first run's completion fails
// its condition, and only the second run's event is published.
func TestGuardFencedOffHandlerPublishesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	first, second := e.guard(t), e.guard(t)
	m := orderMessage("fenced")
	staged, finish := make(chan struct{}), make(chan struct{})
	var firstErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, firstErr = first.Process(ctx, m, func(ctx context.Context, m guard.Message) error {
			err := e.box.Stage(ctx, Event{Type: "never"})
			close(staged)
			<-finish
			return err
		})
	}()
	<-staged
	_, err := second.ReleaseMessage(ctx, m.Scope, m.ID, lwt.Force())
	require.NoError(t, err)
	out, err := second.Process(ctx, m, e.stageShipment(1))
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	close(finish)
	wg.Wait()
	require.ErrorIs(t, firstErr, lwt.ErrLeaseLost)

	pub := &recorder{}
	st := drain(t, ctx, e.relay(t, pub))
	require.Len(t, pub.msgs, 1)
	assert.Equal(t, "shipment.requested", pub.msgs[0].Type)
	assert.Equal(t, int64(2), pub.msgs[0].Fence, "the second claim's")
	assert.Equal(t, 1, st.Dropped, "the fenced-off run's intent")
}
