package guard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

var errHandler = errors.New("downstream unavailable")

// holdMessage processes m with a handler that blocks until the returned release is called,
// and returns once the handler runs (the claim is STARTED under a live lease). done receives
// Process's error.
func holdMessage(t *testing.T, g *guard.Guard, m guard.Message) (release func(), done <-chan error) {
	t.Helper()
	running, unblock, result := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := g.Process(context.Background(), m, func(ctx context.Context, _ guard.Message) error {
			close(running)
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return ctx.Err()
		})
		result <- err
	}()
	select {
	case <-running:
	case err := <-result:
		t.Fatalf("the handler never ran: %v", err)
	}
	return func() { close(unblock) }, result
}

func TestGuardAdminReleasesAndDeletesMessages(t *testing.T) {
	t.Parallel()
	g := newGuard(t, guard.WithMaxAttempts(5))
	ctx := context.Background()
	scope := guard.Scope{Group: "billing", Topic: "invoices", Partition: 3}
	msg := func(id string) guard.Message { return guard.Message{Scope: scope, ID: id} }

	_, err := g.Process(ctx, msg("done"), func(context.Context, guard.Message) error { return nil })
	require.NoError(t, err)
	in, err := g.Inspect(ctx, scope, "done")
	require.NoError(t, err)
	assert.Equal(t, lwt.StatusCompleted, in.Status)
	assert.Greater(t, in.TTL, 6*24*time.Hour, "the guard's 7-day retention")

	release, done := holdMessage(t, g, msg("held"))
	_, err = g.ReleaseMessage(ctx, scope, "held")
	require.ErrorIs(t, err, lwt.ErrInProgress, "a live lease is refused")
	_, err = g.DeleteMessage(ctx, scope, "held")
	require.ErrorIs(t, err, lwt.ErrInProgress)
	res, err := g.ReleaseMessage(ctx, scope, "held", lwt.Force())
	require.NoError(t, err)
	assert.True(t, res.Changed)
	release()
	assert.ErrorIs(t, <-done, lwt.ErrLeaseLost, "the consumer that held it is fenced off")

	ran := false
	out, err := g.Process(ctx, msg("held"), func(context.Context, guard.Message) error { ran = true; return nil })
	require.NoError(t, err)
	assert.Equal(t, guard.Processed, out)
	assert.True(t, ran, "the redelivery runs the handler")

	_, err = g.DeleteMessage(ctx, scope, "done")
	require.NoError(t, err)
	_, err = g.Inspect(ctx, scope, "done")
	require.ErrorIs(t, err, lwt.ErrNotFound)
	_, err = g.Inspect(ctx, guard.Scope{Group: "", Topic: "t"}, "x")
	require.ErrorIs(t, err, guard.ErrInvalidMessage)
}

func TestGuardScanStuckAndListMessages(t *testing.T) {
	t.Parallel()
	g := newGuard(t, guard.WithMaxAttempts(10))
	ctx := context.Background()
	scope := guard.Scope{Group: "g", Topic: "orders", Partition: 0}
	failing := func(context.Context, guard.Message) error { return errHandler }
	for i := range 20 {
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: fmt.Sprint("ok-", i)}, func(context.Context, guard.Message) error { return nil })
		require.NoError(t, err)
	}
	for range 3 {
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: "flaky"}, failing)
		require.ErrorIs(t, err, errHandler)
	}
	_, err := g.Process(ctx, guard.Message{Scope: scope, ID: "failed-once"}, failing)
	require.ErrorIs(t, err, errHandler)

	var stuck []lwt.StuckClaim
	stats, err := g.ScanStuck(ctx, lwt.StuckOptions{MinAttempts: 3}, func(c lwt.StuckClaim) error {
		stuck = append(stuck, c)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, stuck, 1)
	assert.Equal(t, lwt.Key{"g", "orders", 0, "flaky"}, stuck[0].Key)
	assert.Equal(t, lwt.StuckReleasedRepeatedly, stuck[0].Reason)
	assert.EqualValues(t, 22, stats.Rows)

	statuses := map[string]lwt.Status{}
	err = g.ListMessages(ctx, scope, time.Now().Add(-time.Hour), func(m guard.MessageRecord) error {
		require.NotNil(t, m.Record, m.ID)
		statuses[m.ID] = m.Record.Status
		return nil
	})
	require.NoError(t, err)
	assert.Len(t, statuses, 22, "each id once, however often it was delivered")
	assert.Equal(t, lwt.StatusReleased, statuses["flaky"])
	assert.Equal(t, lwt.StatusCompleted, statuses["ok-7"])

	enough := errors.New("enough")
	n := 0
	err = g.ListMessages(ctx, scope, time.Time{}, func(guard.MessageRecord) error {
		if n++; n == 5 {
			return enough
		}
		return nil
	})
	assert.ErrorIs(t, err, enough)
	assert.Equal(t, 5, n)
}
