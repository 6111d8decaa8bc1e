package outbox

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// TestRefusalsAndBadArguments: in one keyspace (creating one is slow on a busy node), the
// refusals and bad arguments that once panicked, lost data or behaved two ways.
func TestRefusalsAndBadArguments(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)

	t.Run("StageRefusalFailsTheRunForGood", func(t *testing.T) {
		// Empty type, too many events, too many bytes, a header that is not UTF-8: each refusal
		// fails the run permanently, whether the function returns it or not, so a retry
		// replays the failure instead of running the business writes again.
		for name, events := range map[string][]Event{
			"empty-type": {{Type: ""}},
			"count":      make([]Event, MaxEvents+1),
			"size":       {{Type: "x", Payload: make([]byte, DefaultMaxSize)}},
			"header":     {{Type: "x", Headers: map[string]string{"h": "\xff\xfe"}}},
		} {
			for i := range events {
				if events[i].Type == "" && name != "empty-type" {
					events[i].Type = "x"
				}
			}
			for _, ignore := range []bool{false, true} {
				var runs atomic.Int64
				key := lwt.IdempotencyKey("refused", name+map[bool]string{true: "-ignored", false: ""}[ignore])
				for range 3 {
					_, err := e.store.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
						runs.Add(1)
						err := e.box.Stage(ctx, events...)
						require.ErrorIs(t, err, ErrInvalidEvent, name)
						assert.True(t, lwt.IsPermanent(err), name)
						assert.Contains(t, err.Error(), "nothing of this call was staged")
						if ignore {
							return []byte("ok"), nil
						}
						return nil, err
					})
					var failure *lwt.FailureError
					require.ErrorAs(t, err, &failure, "%s (ignored %v): recorded FAILED", name, ignore)
				}
				assert.Equal(t, int64(1), runs.Load(), "%s (ignored %v): the function ran once", name, ignore)
			}
		}
	})

	t.Run("NilArguments", func(t *testing.T) {
		assert.ErrorIs(t, e.box.Stage(nil, Event{Type: "x"}), ErrInvalidOption) // a nil ctx is the point
		admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
		require.NoError(t, err)
		assert.ErrorIs(t, admin.ListPending(ctx, time.Now(), nil), ErrInvalidOption)
		assert.ErrorIs(t, admin.ListParked(ctx, nil), ErrInvalidOption)
		_, err = NewRelay(e.session, PublisherFunc(nil), e.relayOpts()...)
		assert.ErrorIs(t, err, ErrInvalidOption, "a typed-nil PublisherFunc")
		_, err = NewRelay(e.session, (*recorder)(nil), e.relayOpts()...)
		assert.ErrorIs(t, err, ErrInvalidOption, "a typed-nil pointer")
		r := e.relay(t, &recorder{})
		_, err = r.Poll(nil) // a nil ctx is the point
		assert.ErrorIs(t, err, ErrInvalidOption)
	})

	t.Run("PublisherPanicIsThePassError", func(t *testing.T) {
		_, err := e.placeOrder(ctx, "o-panic", 1)
		require.NoError(t, err)
		r := e.relay(t, PublisherFunc(func(context.Context, []Message) error { panic("publisher bug") }))
		var perr error
		require.Eventually(t, func() bool {
			assert.NotPanics(t, func() { _, perr = r.Poll(ctx) })
			return perr != nil && strings.Contains(perr.Error(), "publisher bug")
		}, 30*time.Second, 100*time.Millisecond)
		assert.ErrorIs(t, perr, ErrPublisherPanic)
		r.Release(ctx)
		drain(t, ctx, e.relay(t, &recorder{})) // settle it for the subtests after
	})

	t.Run("ListPendingSinceZeroIsBounded", func(t *testing.T) {
		admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
		require.NoError(t, err)
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for _, since := range []time.Time{{}, time.Now().Add(-87600 * time.Hour)} {
			start := time.Now()
			require.NoError(t, admin.ListPending(lctx, since, func(Pending) error { return nil }))
			assert.Less(t, time.Since(start), 15*time.Second, "clamped to the retention")
		}
	})

	t.Run("Layout", func(t *testing.T) {
		// The stagers and relays above stored the layout: 4 shards, 1s buckets, 2s horizon.
		other, err := NewRelay(e.session, &recorder{}, e.relayOpts(WithBucket(2*time.Second))...)
		require.NoError(t, err)
		_, err = other.Poll(ctx)
		require.ErrorIs(t, err, ErrLayoutMismatch, "a relay with another bucket width reads nothing")
		assert.Contains(t, err.Error(), "bucket: stored 1s, configured 2s")
		assert.Empty(t, other.Held())

		box, err := New(e.session, with[StagerOption](e.opts, WithShards(8))...)
		require.NoError(t, err)
		_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "other-layout"), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, Event{Type: "x"})
		})
		require.ErrorIs(t, err, ErrLayoutMismatch, "a stager of another shard count stages nothing")
		assert.ErrorIs(t, err, ErrShardCountChanged)

		admin, err := NewAdmin(e.session, WithKeyspace(e.ks))
		require.NoError(t, err)
		l, err := admin.Layout(ctx)
		require.NoError(t, err)
		assert.Equal(t, Layout{Shards: 4, Bucket: time.Second, Horizon: 2 * time.Second}, l, "an admin takes the stored layout")
		cursors, err := admin.Cursors(ctx)
		require.NoError(t, err)
		assert.Len(t, cursors, 4)
		wrong, err := NewAdmin(e.session, WithKeyspace(e.ks), WithShards(16))
		require.NoError(t, err)
		assert.ErrorIs(t, wrong.ListPending(ctx, time.Now(), func(Pending) error { return nil }), ErrLayoutMismatch)
	})
}
