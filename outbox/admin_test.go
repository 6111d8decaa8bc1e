package outbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// TestAdminPendingAndReplay: the listing shows each pending intent with its record's verdict;
// a replay makes the relay publish a committed operation's events again with the same ids.
func TestAdminPendingAndReplay(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
	require.NoError(t, err)
	_, err = e.placeOrder(ctx, "done", 2)
	require.NoError(t, err)
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "declined"), func(ctx context.Context) ([]byte, error) {
		return nil, errors.Join(e.box.Stage(ctx, Event{Type: "never"}), errors.New("declined"))
	})
	require.Error(t, err)
	staged, finish := make(chan struct{}), make(chan struct{})
	running := make(chan error, 1)
	go func() {
		_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "running"), func(ctx context.Context) ([]byte, error) {
			err := e.box.Stage(ctx, Event{Type: "later"})
			close(staged)
			<-finish
			return []byte("ok"), err
		})
		running <- err
	}()
	<-staged

	list := func() map[string]Pending {
		got := map[string]Pending{}
		require.NoError(t, admin.ListPending(ctx, time.Now().Add(-time.Minute), func(p Pending) error {
			got[p.Key] = p
			return nil
		}))
		return got
	}
	got := list()
	require.Len(t, got, 3)
	assert.Equal(t, "committed", got["done"].Verdict)
	assert.Equal(t, 2, got["done"].Events)
	assert.Equal(t, "not committed", got["declined"].Verdict)
	assert.Equal(t, "in flight", got["running"].Verdict)

	pub := &recorder{}
	r := e.relay(t, pub)
	_, err = r.Poll(ctx)
	require.NoError(t, err)
	got = list()
	assert.Len(t, got, 1, "only the run in flight stays pending")
	close(finish)
	require.NoError(t, <-running)
	drain(t, ctx, r)
	assert.Empty(t, list())
	require.Len(t, pub.ids(), 3)

	dry, err := admin.Replay(ctx, "orders", "done", true)
	require.NoError(t, err)
	assert.False(t, dry.Changed)
	require.Len(t, dry.Messages, 2)
	assert.Equal(t, EventID("orders", "done", 1), dry.Messages[1].ID)
	drain(t, ctx, r)
	assert.Len(t, pub.ids(), 3, "a dry run writes nothing")

	for range 2 { // the second replay reopens the intent the first one left settled
		res, err := admin.Replay(ctx, "orders", "done", false)
		require.NoError(t, err)
		assert.True(t, res.Changed)
		before := len(pub.ids())
		drain(t, ctx, r)
		ids := pub.ids()[before:]
		assert.Equal(t, []string{EventID("orders", "done", 0), EventID("orders", "done", 1)}, ids)
	}

	_, err = admin.Replay(ctx, "orders", "declined", false)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = admin.Replay(ctx, "orders", "nothing-here", false)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = admin.Replay(ctx, "", "x", false)
	assert.ErrorIs(t, err, lwt.ErrInvalidKey)

	cursors, err := admin.Cursors(ctx)
	require.NoError(t, err)
	require.Len(t, cursors, 4)
	assert.Equal(t, "STARTED", cursors[0].Status)
	assert.True(t, cursors[0].LeaseLive)
}
