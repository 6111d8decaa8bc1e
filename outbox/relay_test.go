package outbox

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRelayAfterStoppedRelay: a relay that stopped (Run's ctx ended) gave its shards up, so the
// next relay holds every one after its first pass, without waiting for a lease to run out, and
// goes on from the stopped one's cursors: it publishes what committed since, and not again what
// the stopped one marked.
func TestRelayAfterStoppedRelay(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.placeOrder(ctx, "o-before-stop", 1)
	require.NoError(t, err)

	first := &recorder{}
	r1, err := NewRelay(e.session, first, e.relayOpts()...)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	marked := make(chan struct{}, 1)
	go func() {
		ran <- r1.Run(runCtx, func(st Stats, _ error) {
			if st.Settled > 0 {
				select {
				case marked <- struct{}{}:
				default:
				}
			}
		})
	}()
	select {
	case <-marked:
	case <-time.After(30 * time.Second):
		t.Fatal("the first relay marked nothing within 30s")
	}
	stop()
	require.ErrorIs(t, <-ran, context.Canceled)
	assert.Empty(t, r1.Held(), "a stopped relay holds no shard")

	_, err = e.placeOrder(ctx, "o-after-stop", 1)
	require.NoError(t, err)
	next := &recorder{}
	r2 := e.relay(t, next)
	_, err = r2.Poll(ctx)
	require.NoError(t, err)
	held := r2.Held()
	assert.Len(t, held, 4, "every shard, at the first pass")
	for s, fence := range held {
		assert.Equal(t, int64(2), fence, "shard %d: claimed again after the stopped relay's release", s)
	}
	drain(t, ctx, r2)
	require.Len(t, next.msgs, 1, "only what committed after the stop")
	assert.Equal(t, "o-after-stop", next.msgs[0].Key)
	require.Len(t, first.msgs, 1)
	assert.Equal(t, "o-before-stop", first.msgs[0].Key)
}

// TestRelayStoppingReportsNoError: a pass cut short because Run's ctx ended is no failure, so
// onPass sees no error for it (a relay's owner would otherwise log every shard's "context
// canceled" at each shutdown), and Run returns the ctx's error.
func TestRelayStoppingReportsNoError(t *testing.T) {
	e := newEnv(t)
	r := e.relay(t, &recorder{})
	stopped, stop := context.WithCancel(ctxT(t))
	stop()
	_, err := r.Poll(stopped)
	require.ErrorIs(t, err, context.Canceled, "the pass is cut short")
	var passes []error
	require.ErrorIs(t, r.Run(stopped, func(_ Stats, err error) { passes = append(passes, err) }), context.Canceled)
	require.Len(t, passes, 1)
	assert.NoError(t, passes[0])
}

// TestWithoutStopKeepsOtherFailures: of a pass's joined shard errors, only those caused by the
// relay's own stop are dropped; while the relay runs, nothing is.
func TestWithoutStopKeepsOtherFailures(t *testing.T) {
	timeout := errors.New("write timeout")
	stopped := fmt.Errorf("shard 3: %w", context.Canceled)
	assert.NoError(t, withoutStop(nil, context.Canceled))
	assert.NoError(t, withoutStop(stopped, context.Canceled))
	assert.NoError(t, withoutStop(errors.Join(stopped, stopped), context.Canceled))
	err := withoutStop(errors.Join(stopped, timeout), context.Canceled)
	assert.ErrorIs(t, err, timeout)
	assert.NotErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, withoutStop(timeout, context.Canceled), timeout)
	assert.ErrorIs(t, withoutStop(stopped, nil), context.Canceled, "a running relay reports every error")
	assert.ErrorIs(t, withoutStop(stopped, context.DeadlineExceeded), context.Canceled, "only the stop's own error is dropped")
}
