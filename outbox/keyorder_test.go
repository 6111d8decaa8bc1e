package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
)

// keyOrderEnv is newEnv whose outbox and relays take WithKeyOrder.
func keyOrderEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.opts = append(e.opts, WithKeyOrder())
	box, err := New(e.session, with[StagerOption](e.opts)...)
	require.NoError(t, err)
	e.box = box
	return e
}

// commit runs operation op under ExecuteOnce and stages events in it.
func (e *env) commit(t *testing.T, ctx context.Context, box *Outbox, op string, events ...Event) {
	t.Helper()
	_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", op), func(ctx context.Context) ([]byte, error) {
		return []byte("ok"), box.Stage(ctx, events...)
	})
	require.NoError(t, err)
}

// openRun is an operation whose run has staged its events and waits, in flight, until finish
// gets the error its function returns (nil: it commits).
type openRun struct {
	finish chan error
	done   chan error // ExecuteOnce's error
}

func (e *env) startRun(t *testing.T, ctx context.Context, op string, events ...Event) *openRun {
	t.Helper()
	staged := make(chan error, 1)
	r := &openRun{finish: make(chan error), done: make(chan error, 1)}
	go func() {
		_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", op), func(ctx context.Context) ([]byte, error) {
			staged <- e.box.Stage(ctx, events...)
			return []byte("ok"), <-r.finish
		})
		r.done <- err
	}()
	require.NoError(t, <-staged)
	return r
}

// end lets the run return err and waits for its ExecuteOnce.
func (r *openRun) end(err error) error {
	r.finish <- err
	return <-r.done
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// TestKeyOrderHoldsLaterOperationsOfKey: an operation of key acct-1 stays in flight while a later
// one of the same key commits: the later one is not published (held, and the operator's listing
// says why) until the first commits, then both go out in staging order. Another key and an
// unkeyed event are published meanwhile.
func TestKeyOrderHoldsLaterOperationsOfKey(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	first := e.startRun(t, ctx, "a-first", Event{Type: "account.opened", Key: "acct-1"})
	e.commit(t, ctx, e.box, "a-second", Event{Type: "account.credited", Key: "acct-1"}, Event{Type: "account.debited", Key: "acct-1"})
	e.commit(t, ctx, e.box, "b-other", Event{Type: "account.opened", Key: "acct-2"})
	e.commit(t, ctx, e.box, "c-unkeyed", Event{Type: "audit"})

	pub := &recorder{}
	r := e.relay(t, pub)
	second, other, unkeyed := EventID("orders", "a-second", 0), EventID("orders", "b-other", 0), EventID("orders", "c-unkeyed", 0)
	st, _ := pollUntil(t, ctx, r, nil, 0, func(st Stats) bool {
		return contains(pub.ids(), other) && contains(pub.ids(), unkeyed)
	})
	for range 3 { // a few more passes: the held one stays held
		s, err := r.Poll(ctx)
		require.NoError(t, err)
		st.add(s)
	}
	assert.NotContains(t, pub.ids(), second, "held while the first operation of acct-1 is in flight")
	assert.Positive(t, st.Held)

	admin, err := NewAdmin(e.session, with[AdminOption](e.opts)...)
	require.NoError(t, err)
	var held []Pending
	require.NoError(t, admin.ListPending(ctx, time.Time{}, func(p Pending) error {
		if p.Key == "a-second" {
			held = append(held, p)
		}
		return nil
	}))
	require.Len(t, held, 1)
	assert.Equal(t, "committed", held[0].Verdict)
	assert.Contains(t, held[0].LastError, "held back")

	require.NoError(t, first.end(nil))
	drain(t, ctx, r)
	ids := pub.ids()
	firstID := EventID("orders", "a-first", 0)
	require.Contains(t, ids, firstID)
	require.Contains(t, ids, second)
	assert.Less(t, indexOf(ids, firstID), indexOf(ids, second), "acct-1 in staging order")
	assert.Less(t, indexOf(ids, second), indexOf(ids, EventID("orders", "a-second", 1)), "a run's events in order")
	assert.Len(t, ids, 5, "each event once")
}

// TestKeyOrderReleasedOrFailedEarlierReleasesKey: an earlier operation that is released (a
// retryable error) or fails for good commits nothing, and the later operations of its key go
// out once it has settled.
func TestKeyOrderReleasedOrFailedEarlierReleasesKey(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	released := e.startRun(t, ctx, "x-first", Event{Type: "t", Key: "acct-x"})
	failed := e.startRun(t, ctx, "y-first", Event{Type: "t", Key: "acct-y"})
	e.commit(t, ctx, e.box, "x-second", Event{Type: "t", Key: "acct-x"})
	e.commit(t, ctx, e.box, "y-second", Event{Type: "t", Key: "acct-y"})

	pub := &recorder{}
	r := e.relay(t, pub)
	var st Stats
	for range 3 {
		s, err := r.Poll(ctx)
		require.NoError(t, err)
		st.add(s)
	}
	assert.Empty(t, pub.ids(), "both held")
	assert.GreaterOrEqual(t, st.Held, 2, "both held")

	boom := errors.New("boom")
	require.ErrorIs(t, released.end(boom), boom)
	require.ErrorIs(t, failed.end(lwt.Permanent(boom)), boom)
	st = drain(t, ctx, r)
	assert.ElementsMatch(t, []string{EventID("orders", "x-second", 0), EventID("orders", "y-second", 0)}, pub.ids())
	assert.Equal(t, 2, st.Dropped)
}

// TestKeyOrderPoisonHoldsItsKeyUntilParked: an operation the broker refuses for good holds the
// later operations of its key while it is retried, not those of other keys; once it is parked
// they go out, and an operator's unpark publishes it after them.
func TestKeyOrderPoisonHoldsItsKeyUntilParked(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	pub := &poisonPublisher{seen: map[string]int{}}
	r := e.relay(t, pub, fakeClock(clk.now), WithMaxAttempts(3), WithPublishBackoff(time.Second, 2*time.Second))
	e.commit(t, ctx, box, "bad", Event{Type: "poison", Key: "acct-1"})
	e.commit(t, ctx, box, "after", Event{Type: "t", Key: "acct-1"})
	e.commit(t, ctx, box, "other", Event{Type: "t", Key: "acct-2"})
	after, other := EventID("orders", "after", 0), EventID("orders", "other", 0)

	passes, early := 0, false
	st, errs := pollUntil(t, ctx, r, clk, 3*time.Second, func(st Stats) bool {
		passes++
		if passes == 1 {
			assert.Contains(t, pub.ids(), other, "another key is not held")
		}
		early = early || st.Parked == 0 && contains(pub.ids(), after)
		return st.Parked == 1
	})
	assert.ErrorIs(t, errors.Join(errs...), ErrParked)
	assert.False(t, early, "published before the poison event of its key was parked")
	assert.Equal(t, 3, st.Attempts)
	assert.Positive(t, st.Held)
	drain(t, ctx, r)
	assert.Contains(t, pub.ids(), after, "released once the poison event was parked")

	// The operator fixes the cause and unparks it: published again, in acct-1's shard, after.
	pub.mu.Lock()
	pub.seen = map[string]int{}
	pub.mu.Unlock()
	admin, err := NewAdmin(e.session, with[AdminOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	res, err := admin.Unpark(ctx, "orders", "bad", false)
	require.NoError(t, err)
	assert.Equal(t, keyShard("acct-1", 4), res.Shard)
	accept := &recorder{}
	r.Release(ctx)
	drain(t, ctx, e.relay(t, accept, fakeClock(clk.now)))
	assert.Equal(t, []string{EventID("orders", "bad", 0)}, accept.ids())
}

// TestKeyOrderLayoutShared: the key order is part of the stored layout: a relay or a stager
// that disagrees with it is refused, and an admin takes it.
func TestKeyOrderLayoutShared(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	e.commit(t, ctx, e.box, "o-1", Event{Type: "t", Key: "k"}) // stores the layout, key order on

	plain := e.opts[:len(e.opts)-1]
	r, err := NewRelay(e.session, &recorder{}, with[RelayOption](plain, WithRelayLease(4*time.Second))...)
	require.NoError(t, err)
	_, err = r.Poll(ctx)
	require.ErrorIs(t, err, ErrLayoutMismatch)
	assert.Contains(t, err.Error(), "key order")

	box, err := New(e.session, with[StagerOption](plain)...)
	require.NoError(t, err)
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "o-2"), func(ctx context.Context) ([]byte, error) {
		return []byte("ok"), box.Stage(ctx, Event{Type: "t", Key: "k"})
	})
	require.ErrorIs(t, err, ErrLayoutMismatch)

	admin, err := NewAdmin(e.session, WithKeyspace(e.ks))
	require.NoError(t, err)
	l, err := admin.Layout(ctx)
	require.NoError(t, err)
	assert.True(t, l.KeyOrder, "adopted from the stored layout")

	// The other way round: a layout stored without key order refuses a relay with it.
	f := newEnv(t)
	f.commit(t, ctx, f.box, "o-1", Event{Type: "t", Key: "k"})
	r, err = NewRelay(f.session, &recorder{}, f.relayOpts(WithKeyOrder())...)
	require.NoError(t, err)
	_, err = r.Poll(ctx)
	require.ErrorIs(t, err, ErrLayoutMismatch)
}

// TestKeyOrderMixedKeysRefused: under WithKeyOrder a run whose events carry two keys is refused,
// in one Stage or across two, and nothing of it is staged or published; a Stage of no events
// stages nothing.
func TestKeyOrderMixedKeysRefused(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	var stageErr error
	_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "one-call"), func(ctx context.Context) ([]byte, error) {
		stageErr = e.box.Stage(ctx, Event{Type: "t", Key: "a"}, Event{Type: "t", Key: "b"})
		return nil, stageErr
	})
	require.ErrorIs(t, stageErr, ErrMixedKeys)
	require.ErrorIs(t, stageErr, ErrInvalidEvent)
	assert.Contains(t, stageErr.Error(), `event 1 has key "b"`)
	require.Error(t, err)
	var n int
	require.NoError(t, e.session.Query("SELECT count(*) FROM "+e.ks+"."+DefaultIntentsTable).WithContext(ctx).Scan(&n))
	assert.Zero(t, n, "no intent written")

	// Across two calls, the run ignoring the refusal: recorded FAILED all the same.
	res, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "two-calls"), func(ctx context.Context) ([]byte, error) {
		require.NoError(t, e.box.Stage(ctx, Event{Type: "t", Key: "a"}))
		stageErr = e.box.Stage(ctx, Event{Type: "t", Key: ""})
		return []byte("ok"), nil
	})
	require.ErrorIs(t, stageErr, ErrMixedKeys)
	require.Error(t, err, "the run fails for good: %v", res)

	// No events: nothing staged, the run commits.
	_, err = e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", "none"), func(ctx context.Context) ([]byte, error) {
		return []byte("ok"), e.box.Stage(ctx)
	})
	require.NoError(t, err)

	pub := &recorder{}
	drain(t, ctx, e.relay(t, pub))
	assert.Empty(t, pub.ids())
}

// stepClock is a stagers' clock that moves at least a millisecond between readings: intents
// keep their staging time to the millisecond, so runs staged in sequence are ordered by it.
type stepClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = later(time.Now(), c.last.Add(time.Millisecond))
	return c.last
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// orderChecker is a Publisher that checks, per key, that every event is first published after
// the events staged before it: its payload is its place in its key's staging sequence.
type orderChecker struct {
	mu         sync.Mutex
	seen       map[string]bool // ids published
	last       map[string]int  // per key, the highest place first published
	violations []string
}

func (p *orderChecker) Publish(_ context.Context, msgs []Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		if p.seen[m.ID] {
			continue // a republication repeats older events: the consumer dedups by id
		}
		p.seen[m.ID] = true
		var place int
		_, _ = fmt.Sscan(string(m.Payload), &place)
		if last, ok := p.last[m.Key]; ok && place <= last {
			p.violations = append(p.violations, fmt.Sprintf("%s: %d published after %d", m.Key, place, last))
		}
		p.last[m.Key] = max(p.last[m.Key], place)
	}
	return nil
}

// TestKeyOrderManyGoroutines: 16 goroutines stage on 3 keys while two relays publish; each run
// takes its key's next place when it stages, then commits after a while, or is released, so
// runs commit out of staging order. Every committed event is published, none of the others,
// and each key's events first go out in staging order.
func TestKeyOrderManyGoroutines(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	clk := &stepClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	keys := []string{"acct-0", "acct-1", "acct-2"}
	var mu sync.Mutex // one stager of a key at a time, so places follow staging times
	places := map[string]int{}
	var committed sync.Map // id -> true
	var wg sync.WaitGroup
	errs := make(chan error, 16*8)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				key, op := keys[(g+i)%len(keys)], fmt.Sprintf("g%d-%d", g, i)
				fail := (g+i)%5 == 0
				_, err := e.store.ExecuteOnce(ctx, lwt.IdempotencyKey("orders", op), func(ctx context.Context) ([]byte, error) {
					mu.Lock()
					places[key]++
					err := box.Stage(ctx, Event{Type: "t", Key: key, Payload: fmt.Appendf(nil, "%d", places[key])})
					mu.Unlock()
					if err != nil {
						return nil, err
					}
					time.Sleep(time.Duration((g*7+i*3)%15) * time.Millisecond) // commits in another order
					if fail {
						return nil, errors.New("released")
					}
					return []byte("ok"), nil
				})
				switch {
				case fail && err != nil:
				case err != nil:
					errs <- fmt.Errorf("%s: %w", op, err)
				default:
					committed.Store(EventID("orders", op, 0), true)
				}
			}
		}()
	}
	pub := &orderChecker{seen: map[string]bool{}, last: map[string]int{}}
	relays := []*Relay{e.relay(t, pub, WithMaxShards(2)), e.relay(t, pub, WithMaxShards(2))}
	rctx, stop := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	for _, r := range relays {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			_ = r.Run(rctx, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := 0
	committed.Range(func(any, any) bool { want++; return true })
	deadline := time.Now().Add(90 * time.Second)
	for {
		pub.mu.Lock()
		n := len(pub.seen)
		pub.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	rwg.Wait()

	pub.mu.Lock()
	defer pub.mu.Unlock()
	assert.Empty(t, pub.violations)
	assert.Len(t, pub.seen, want, "every committed event, and only those")
	committed.Range(func(id, _ any) bool {
		assert.True(t, pub.seen[id.(string)], "%s published", id)
		return true
	})
}

// TestKeyOrderBucketsOldestFirst: under WithKeyOrder a pass works a shard's buckets oldest
// first, and none after a closed bucket it does not read (a relay catching up past the sweep's
// limit): an earlier event of a key may be there.
func TestKeyOrderBucketsOldestFirst(t *testing.T) {
	cfg, err := newConfig(false, []Option{WithBucket(time.Second), WithHorizon(2 * time.Second), WithKeyOrder()})
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	r := &Relay{judge: judge{cfg: cfg}}
	sh := &shard{frontier: 990}
	// Pending 980 and 985, swept 990 to 997, open 998 to 1000: all read.
	work := func(buckets ...int64) []int64 {
		reads := make([]bucketRead, len(buckets))
		for i, b := range buckets {
			reads[i].fence = b // each read stays with its bucket
		}
		got, gotReads := r.inKeyOrder(sh, buckets, reads, now)
		for i, rd := range gotReads {
			assert.Equal(t, got[i], rd.fence)
		}
		return got
	}
	got := work(997, 998, 999, 1000, 980, 985, 990, 991, 992, 993, 994, 995, 996)
	assert.Equal(t, []int64{980, 985, 990, 991, 992, 993, 994, 995, 996, 997, 998, 999, 1000}, got)
	assert.NotNil(t, sh.blocked)
	// The sweep stopped at 993: 994 to 996 are closed and unread, so 997 and the open ones wait.
	got = work(997, 998, 999, 1000, 985, 990, 991, 992, 993)
	assert.Equal(t, []int64{985, 990, 991, 992, 993}, got)
}

// TestKeyOrderHoldsAcrossBuckets: the earlier operation of a key was staged in a bucket that has
// closed since and stays pending in the relay's cursor; the later one, in a newer bucket, is
// held until it settles.
func TestKeyOrderHoldsAcrossBuckets(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	clk := &handClock{}
	box, err := New(e.session, with[StagerOption](e.opts, fakeClock(clk.now))...)
	require.NoError(t, err)
	e.box = box
	first := e.startRun(t, ctx, "first", Event{Type: "t", Key: "acct-1"})
	clk.advance(5 * time.Second) // the first one's bucket (1 s) closes after its horizon (2 s)
	e.commit(t, ctx, box, "second", Event{Type: "t", Key: "acct-1"})

	pub := &recorder{}
	r := e.relay(t, pub, fakeClock(clk.now))
	st, _ := pollUntil(t, ctx, r, clk, time.Second, func(st Stats) bool { return st.Held >= 3 })
	assert.Empty(t, pub.ids(), "held behind the earlier bucket's operation")
	assert.Zero(t, st.Published)
	require.NoError(t, first.end(nil))
	drain(t, ctx, r)
	assert.Equal(t, []string{EventID("orders", "first", 0), EventID("orders", "second", 0)}, pub.ids())
}

// TestKeyOrderAcrossNamespaces: the key alone orders, whoever stages: a consumer's handler
// (guard.Guard.Process) staging an event of acct-9 waits for an operation of acct-9 that is
// still in flight.
func TestKeyOrderAcrossNamespaces(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	first := e.startRun(t, ctx, "op-1", Event{Type: "t", Key: "acct-9"})
	_, err := e.guard(t).Process(ctx, orderMessage("m-1"), func(ctx context.Context, _ guard.Message) error {
		return e.box.Stage(ctx, Event{Type: "shipment.requested", Key: "acct-9"})
	})
	require.NoError(t, err)

	pub := &recorder{}
	r := e.relay(t, pub)
	_, _ = pollUntil(t, ctx, r, nil, 0, func(st Stats) bool { return st.Held >= 2 })
	assert.Empty(t, pub.ids())
	require.NoError(t, first.end(nil))
	drain(t, ctx, r)
	assert.Equal(t, []string{EventID("orders", "op-1", 0), EventID(GuardNamespace("billing", "orders", 3), "m-1", 0)}, pub.ids())
}

// TestKeyOrderAbandonedRunReleasedByOperator: a run that never ends (its process gone) holds its
// key until an operator releases its record (cassdedup key release): the relay then drops its
// intent and publishes the later operations of its key; the run's own completion, should it
// come back, is refused.
func TestKeyOrderAbandonedRunReleasedByOperator(t *testing.T) {
	e := keyOrderEnv(t)
	ctx := ctxT(t)
	gone := e.startRun(t, ctx, "gone", Event{Type: "t", Key: "acct-1"})
	e.commit(t, ctx, e.box, "later", Event{Type: "t", Key: "acct-1"})
	pub := &recorder{}
	r := e.relay(t, pub)
	_, _ = pollUntil(t, ctx, r, nil, 0, func(st Stats) bool { return st.Held >= 2 })
	assert.Empty(t, pub.ids())

	_, err := e.store.ReleaseKey(ctx, lwt.IdempotencyKey("orders", "gone"), lwt.Force())
	require.NoError(t, err)
	st := drain(t, ctx, r)
	assert.Equal(t, []string{EventID("orders", "later", 0)}, pub.ids())
	assert.Equal(t, 1, st.Dropped)
	require.ErrorIs(t, gone.end(nil), lwt.ErrLeaseLost)
	drain(t, ctx, r)
	assert.Equal(t, []string{EventID("orders", "later", 0)}, pub.ids(), "nothing of the released run")
}
