package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// handClock is a settable clock, shared by a relay and the test.
type handClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *handClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *handClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// longEnv is an outbox laid out as in production (one-hour buckets and horizon, a 24 h
// retention as the relay knows it) over records that really expire after 3 s, so a relay
// whose clock is moved a day ahead meets what it would after a day-long outage.
func longEnv(t *testing.T) *env {
	t.Helper()
	session, ks := testnode.NewSession(t)
	store, err := lwt.NewStore(session, Table(ks), lwt.WithRetention(3*time.Second), lwt.WithLease(time.Second))
	require.NoError(t, err)
	opts := []Option{WithKeyspace(ks), WithBucket(time.Hour), WithHorizon(time.Hour), WithShards(2)}
	box, err := New(session, with[StagerOption](opts)...)
	require.NoError(t, err)
	return &env{session: session, ks: ks, store: store, box: box, opts: opts}
}

// recordGone waits until the record of key has expired on the node.
func (e *env) recordGone(t *testing.T, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := -1
		_ = e.session.Query(`SELECT count(*) FROM "`+e.ks+`".idempotency_keys WHERE namespace = 'orders' AND key = ?`, key).Scan(&n)
		return n == 0
	}, 30*time.Second, 200*time.Millisecond, "the record of %s expires", key)
}

// pollUntil polls r until done says so, advancing clk by step before each pass, and returns
// the stats and errors of every pass.
func pollUntil(t *testing.T, ctx context.Context, r *Relay, clk *handClock, step time.Duration, done func(Stats) bool) (Stats, []error) {
	t.Helper()
	var total Stats
	var errs []error
	for i := 0; ; i++ {
		require.Less(t, i, 400, "the relay never got there")
		if clk != nil {
			clk.advance(step)
		}
		st, err := r.Poll(ctx)
		total.add(st)
		total.Shards = st.Shards
		if err != nil {
			errs = append(errs, err)
		}
		if done(total) {
			return total, errs
		}
		time.Sleep(20 * time.Millisecond) // pacing only: every judgement runs on the relay's clock
	}
}

// TestRelayOutageLongerThanRetention: no relay runs while operations commit, and their records
// expire (a day-long outage, by the relay's clock). When a relay comes back, the committed
// events are not dropped: their copies are parked (ErrCommitUnknown, Stats.Expired, the
// admin's listing), an operator unparks one (published with its ids) and discards another;
// a run that never sealed its completion is dropped as before.
func TestRelayOutageLongerThanRetention(t *testing.T) {
	e := longEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	pub := &recorder{}
	// A relay ran before the outage: the shards have cursors.
	before := e.relay(t, pub, fakeClock(clk.now))
	_, err := before.Poll(ctx)
	require.NoError(t, err)
	before.Release(ctx)

	for _, k := range []string{"o-1", "o-2"} {
		_, err := e.placeOrder(ctx, k, 2)
		require.NoError(t, err)
	}
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "declined"), func(ctx context.Context) ([]byte, error) {
		return nil, errors.Join(e.box.Stage(ctx, Event{Type: "never"}), errors.New("declined"))
	})
	require.Error(t, err)
	for _, k := range []string{"o-1", "o-2", "declined"} {
		e.recordGone(t, k)
	}

	clk.advance(25 * time.Hour)
	var logs bytes.Buffer
	r := e.relay(t, pub, fakeClock(clk.now), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	st, errs := pollUntil(t, ctx, r, nil, 0, func(st Stats) bool { return st.Settled >= 3 })
	assert.Equal(t, 2, st.Parked, "both committed operations parked")
	assert.Equal(t, 2, st.Expired)
	assert.Equal(t, 1, st.Dropped, "the run that never sealed is dropped")
	assert.Empty(t, pub.ids(), "nothing published on a guess")
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errors.Join(errs...), ErrCommitUnknown, "the pass says so")
	assert.Contains(t, logs.String(), "events parked")

	admin, err := NewAdmin(e.session, with[AdminOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	parked := map[string]Parked{}
	require.NoError(t, admin.ListParked(ctx, func(p Parked) error { parked[p.Key] = p; return nil }))
	require.Len(t, parked, 2)
	assert.Equal(t, ReasonExpired, parked["o-1"].Reason)
	require.Len(t, parked["o-1"].Messages, 2)
	assert.Equal(t, EventID("orders", "o-1", 1), parked["o-1"].Messages[1].ID)

	dry, err := admin.Unpark(ctx, "orders", "o-1", true)
	require.NoError(t, err)
	assert.Len(t, dry.Messages, 2)
	_, err = admin.Unpark(ctx, "orders", "o-1", false)
	require.NoError(t, err)
	// The relay finds the unparked intent once its clock passed the arrival lag.
	_, errs = pollUntil(t, ctx, r, clk, 100*time.Millisecond, func(st Stats) bool { return st.Published >= 2 })
	assert.Empty(t, errs)
	assert.Equal(t, []string{EventID("orders", "o-1", 0), EventID("orders", "o-1", 1)}, pub.ids())

	_, err = admin.Discard(ctx, "orders", "o-2", true)
	require.NoError(t, err)
	_, err = admin.Discard(ctx, "orders", "o-2", false)
	require.NoError(t, err)
	_, err = admin.Discard(ctx, "orders", "o-2", false)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = admin.Unpark(ctx, "orders", "o-1", false)
	assert.ErrorIs(t, err, ErrNotFound, "unparked once")
	n := 0
	require.NoError(t, admin.ListParked(ctx, func(Parked) error { n++; return nil }))
	assert.Zero(t, n)

	// Away longer than an intent lives (the retention and the grace): the relay says that
	// intents may have expired unread.
	r.Release(ctx)
	clk.advance(9 * 24 * time.Hour)
	late := e.relay(t, pub, fakeClock(clk.now))
	_, err = late.Poll(ctx)
	require.ErrorIs(t, err, ErrOutageTooLong)
	assert.Contains(t, err.Error(), "may have expired unread")
}

// TestBrokerOutageLongerThanRetention: the relay runs but its publisher fails while the
// records expire. The relay keeps what it saw (the commit and the events' copy) in the intent,
// backs off, parks nothing (no other event went through, so the failures are the broker's),
// and publishes every event once the broker is back, a day later by its clock.
func TestBrokerOutageLongerThanRetention(t *testing.T) {
	e := longEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	var down atomic.Bool
	down.Store(true)
	pub := &recorder{}
	r := e.relay(t, PublisherFunc(func(ctx context.Context, msgs []Message) error {
		if down.Load() {
			return errors.New("broker unreachable")
		}
		return pub.Publish(ctx, msgs)
	}), fakeClock(clk.now), WithMaxAttempts(2), WithPublishBackoff(time.Second, 2*time.Second))
	for _, k := range []string{"b-1", "b-2", "b-3"} {
		_, err := e.placeOrder(ctx, k, 1)
		require.NoError(t, err)
	}
	st, _ := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool { return st.Transient >= 9 })
	assert.Zero(t, st.Parked, "an outage parks nothing")
	assert.Zero(t, st.Attempts, "nor counts toward parking")
	for _, k := range []string{"b-1", "b-2", "b-3"} {
		e.recordGone(t, k)
	}
	r.Release(ctx) // so that the relay, back a day later by its clock, claims its shards at once
	clk.advance(24 * time.Hour)
	down.Store(false)
	st, errs := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool { return st.Published >= 3 })
	assert.Empty(t, errs)
	assert.Zero(t, st.Parked)
	assert.ElementsMatch(t, []string{EventID("orders", "b-1", 0), EventID("orders", "b-2", 0), EventID("orders", "b-3", 0)}, pub.ids())
}

// poisonPublisher accepts every message but those of type "poison", which it rejects for good
// (ErrRejected), reporting per message as a Kafka publisher does, and counts what it was given.
type poisonPublisher struct {
	recorder
	mu   sync.Mutex
	seen map[string]int
}

func (p *poisonPublisher) Publish(ctx context.Context, msgs []Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return publishEach(ctx, &p.recorder, msgs, func(m Message) error {
		p.seen[m.ID]++
		if m.Type == "poison" {
			return fmt.Errorf("%w: record too large", ErrRejected)
		}
		return nil
	})
}

// publishEach reports per message, as a Kafka publisher does: refuse's error for each message
// it refuses, and the others published to rec.
func publishEach(ctx context.Context, rec *recorder, msgs []Message, refuse func(Message) error) error {
	errs := make([]error, len(msgs))
	var ok []Message
	failed := false
	for i, m := range msgs {
		if errs[i] = refuse(m); errs[i] != nil {
			failed = true
			continue
		}
		ok = append(ok, m)
	}
	_ = rec.Publish(ctx, ok)
	if failed {
		return &PublishErrors{Errs: errs}
	}
	return nil
}

// TestPoisonEventParked: one unpublishable operation among good ones, in steady traffic, is
// retried with backoff and parked after its attempts; every good event is published once (no
// republication of its batch's others) and the operations staged meanwhile are not held up.
func TestPoisonEventParked(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...) // stagers and relay on one clock
	require.NoError(t, err)
	pub := &poisonPublisher{seen: map[string]int{}}
	r := e.relay(t, pub, fakeClock(clk.now), WithMaxAttempts(3), WithPublishBackoff(time.Second, 2*time.Second))
	var good []string
	stage := func(key, typ string) {
		_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", key), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, Event{Type: typ, Key: key})
		})
		require.NoError(t, err)
		if typ != "poison" {
			good = append(good, key)
		}
	}
	for i := range 6 {
		stage(fmt.Sprintf("good-%d", i), "order.placed")
		if i == 2 {
			stage("bad", "poison")
		}
	}
	tick := 0
	st, errs := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool {
		tick++
		stage(fmt.Sprintf("tick-%d", tick), "order.placed") // traffic goes on meanwhile
		return st.Parked == 1
	})
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errors.Join(errs...), ErrParked)
	assert.Equal(t, 3, st.Attempts, "three failed attempts, the third parked it")
	drain(t, ctx, r)
	assert.Equal(t, 3, pub.seen[EventID("orders", "bad", 0)], "three attempts, then parked")
	for _, k := range good {
		assert.Equal(t, 1, pub.seen[EventID("orders", k, 0)], "%s published once", k)
	}

	admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
	require.NoError(t, err)
	var parked []Parked
	require.NoError(t, admin.ListParked(ctx, func(p Parked) error { parked = append(parked, p); return nil }))
	require.Len(t, parked, 1)
	assert.Equal(t, "bad", parked[0].Key)
	assert.Equal(t, ReasonPoison, parked[0].Reason)
	assert.Equal(t, 3, parked[0].Attempts)
	assert.Contains(t, parked[0].LastError, "record too large")
}

// TestHangingPublishCutAtDeadline: a publisher that never returns on its own is cut at the
// publish timeout, well inside the relay's lease; the pass reports it, logs it as slow, and
// the shard stays held.
func TestHangingPublishCutAtDeadline(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	_, err := e.placeOrder(ctx, "o-hang", 1)
	require.NoError(t, err)
	var logs bytes.Buffer
	var mu sync.Mutex
	r := e.relay(t, PublisherFunc(func(ctx context.Context, _ []Message) error {
		<-ctx.Done()
		return ctx.Err()
	}), WithPublishTimeout(500*time.Millisecond), WithSlowPublish(200*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))))
	var st Stats
	var perr error
	require.Eventually(t, func() bool {
		start := time.Now()
		st, perr = r.Poll(ctx)
		took := time.Since(start)
		if st.Failed == 0 {
			return false
		}
		assert.Less(t, took, 3*time.Second, "cut at the deadline, inside the 4s lease")
		return true
	}, 30*time.Second, 100*time.Millisecond)
	require.ErrorIs(t, perr, context.DeadlineExceeded)
	assert.Contains(t, perr.Error(), "WithPublishTimeout")
	assert.Equal(t, 1, st.SlowPublishes)
	assert.Equal(t, 4, st.Shards, "the shards stay held")
	mu.Lock()
	assert.Contains(t, logs.String(), "slow publish")
	mu.Unlock()
	_, err = NewRelay(e.session, &recorder{}, e.relayOpts(WithPublishTimeout(4*time.Second))...)
	assert.ErrorIs(t, err, ErrInvalidOption, "a publish timeout as long as the lease")
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
