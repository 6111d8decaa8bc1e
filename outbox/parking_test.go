package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// slowPublisher accepts every message but those of the keys it holds slow: a call that carries
// one waits for its deadline, then reports the slow messages timed out and the others accepted,
// as kafkapub does when some records are not acknowledged in time. While whole is set, every
// call instead fails as a whole, as when the broker cannot be reached.
type slowPublisher struct {
	recorder
	slow  atomic.Bool
	whole atomic.Bool
	calls atomic.Int64
}

func (p *slowPublisher) Publish(ctx context.Context, msgs []Message) error {
	p.calls.Add(1)
	if p.whole.Load() {
		return errors.New("dial tcp 127.0.0.1:9: connection refused")
	}
	return publishEach(ctx, &p.recorder, msgs, func(m Message) error {
		if !p.slow.Load() || !strings.HasPrefix(m.Key, "slow-") {
			return nil
		}
		<-ctx.Done()
		// A timed-out record, even one a careless publisher marks rejected, is no rejection.
		return fmt.Errorf("%w: records have timed out: %w", ErrRejected, ctx.Err())
	})
}

// TestTimeoutsParkNothing: a publisher that times out some events on every call for many
// passes, while it accepts the others, and then fails whole calls (the broker unreachable),
// parks nothing and counts no attempt toward parking: the events stay pending, back off, are
// counted as transient failures, and are published once the broker is back.
func TestTimeoutsParkNothing(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	pub := &slowPublisher{}
	pub.slow.Store(true)
	r := e.relay(t, pub, fakeClock(clk.now), WithMaxAttempts(2), WithPublishBackoff(time.Second, 2*time.Second),
		WithPublishTimeout(300*time.Millisecond))
	stage := func(key string) {
		_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, Event{Type: "order.placed", Key: key})
		})
		require.NoError(t, err)
	}
	want := []string{}
	for i := range 3 {
		for _, k := range []string{fmt.Sprintf("slow-%d", i), fmt.Sprintf("fast-%d", i)} {
			stage(k)
			want = append(want, EventID("orders", k, 0))
		}
	}
	tick := 0
	st, errs := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool {
		tick++
		k := fmt.Sprintf("fast-tick-%d", tick) // others go through meanwhile
		stage(k)
		want = append(want, EventID("orders", k, 0))
		return st.Transient >= 3*6 // six failed publications of each slow event: thrice the limit
	})
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errors.Join(errs...), context.DeadlineExceeded)
	assert.Zero(t, st.Parked, "timeouts park nothing")
	assert.Zero(t, st.Attempts, "timeouts count nothing toward parking")
	assert.Positive(t, st.Published, "the others are published meanwhile")

	pub.slow.Store(false)
	pub.whole.Store(true)
	calls := pub.calls.Load()
	st, _ = pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool { return pub.calls.Load() >= calls+12 })
	assert.Zero(t, st.Parked, "an unreachable broker parks nothing")
	assert.Zero(t, st.Attempts)
	assert.Positive(t, st.Transient)

	pub.whole.Store(false)
	drain(t, ctx, r)
	assert.ElementsMatch(t, want, pub.ids(), "every event published once, none parked")
	admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
	require.NoError(t, err)
	n := 0
	require.NoError(t, admin.ListParked(ctx, func(Parked) error { n++; return nil }))
	assert.Zero(t, n)
}

// wholeRejecter rejects a whole call that carries a poison event, without saying which one
// (no PublishErrors), and accepts every other call.
type wholeRejecter struct {
	recorder
	mu    sync.Mutex
	calls []int // messages per call
}

func (p *wholeRejecter) Publish(ctx context.Context, msgs []Message) error {
	p.mu.Lock()
	p.calls = append(p.calls, len(msgs))
	p.mu.Unlock()
	for _, m := range msgs {
		if m.Type == "poison" {
			return fmt.Errorf("%w: a record of the batch is invalid", ErrRejected)
		}
	}
	return p.recorder.Publish(ctx, msgs)
}

// TestWholeCallRejectionSplits: a publisher that rejects a batch as a whole gets its operations
// one at a time, so the poison one alone is rejected and parked after its attempts, and the
// others of its batch are published once, without waiting for it.
func TestWholeCallRejectionSplits(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	pub := &wholeRejecter{}
	r := e.relay(t, pub, fakeClock(clk.now), WithMaxAttempts(2), WithPublishBackoff(time.Second, 2*time.Second))
	var good []string
	for i := range 5 {
		typ, key := "order.placed", fmt.Sprintf("k-%d", i)
		if i == 2 {
			typ = "poison"
		}
		_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, Event{Type: typ, Key: key})
		})
		require.NoError(t, err)
		if typ != "poison" {
			good = append(good, EventID("orders", key, 0))
		}
	}
	st, errs := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool { return st.Parked == 1 })
	assert.ErrorIs(t, errors.Join(errs...), ErrParked)
	assert.Equal(t, 2, st.Attempts, "two rejections of the poison event alone, the second parked it")
	drain(t, ctx, r)
	assert.ElementsMatch(t, good, pub.ids(), "the others published once each")
}
