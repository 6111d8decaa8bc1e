package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

func guardOn(t testing.TB, session *gocql.Session, ks string, opts ...guard.Option) *guard.Guard {
	t.Helper()
	g, err := guard.New(session, append([]guard.Option{guard.WithKeyspace(ks),
		guard.WithRetention(24 * time.Hour)}, opts...)...)
	require.NoError(t, err)
	return g
}

// newPreCheck sizes a filter for the tests' few thousand ids per scope, at a 0.1% rate, with a
// retention above the guard's 24 h.
func newPreCheck(t testing.TB, scope guard.Scope) *bloom.PreCheck {
	t.Helper()
	p, err := bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", scope.Group, scope.Topic, scope.Partition),
		bloom.WithExpectedItems(20000), bloom.WithFalsePositiveRate(0.001), bloom.WithRetention(25*time.Hour))
	require.NoError(t, err)
	return p
}

// deliver redelivers m to g until the broker could acknowledge it: the handler's own failures
// say "fails once" (the fast-path tests' handlers).
func deliver(t testing.TB, ctx context.Context, g *guard.Guard, m guard.Message, h guard.Handler) {
	redeliver(t, ctx, g, m, h, "fails once", nil)
}

// redeliver redelivers m to g until the broker could acknowledge it or dead-letter it, and
// returns the final outcome; seen, if set, is told every outcome. Handler failures must contain
// failure. It runs on goroutines of its own, so it reports with assert and returns rather than
// stopping the test.
func redeliver(t testing.TB, ctx context.Context, g *guard.Guard, m guard.Message, h guard.Handler, failure string, seen func(guard.Outcome)) guard.Outcome {
	for {
		out, err := g.Process(ctx, m, h)
		if seen != nil {
			seen(out)
		}
		ok := true
		switch out {
		case guard.Processed, guard.Duplicate:
			assert.NoError(t, err)
			return out
		case guard.Poison:
			assert.ErrorIs(t, err, guard.ErrPoison)
			return out
		case guard.InProgress:
			ok = assert.ErrorIs(t, err, lwt.ErrInProgress)
			time.Sleep(2 * time.Millisecond)
		case guard.Failed:
			ok = assert.ErrorContains(t, err, failure)
		default:
			ok = assert.Fail(t, "unexpected outcome", "%v: %v", out, err)
		}
		if !ok {
			return out
		}
	}
}

// TestFastPathOwnershipRespectedProcessesEachMessageOnce runs one consumer (a Guard and a
// PreCheck) per partition over four partitions, through three rounds separated by restarts (a
// new Guard and PreCheck warmed from the table at a higher epoch), twice. Each round brings new
// messages, some delivered twice at once to the consumer, some redelivered later in the round,
// some whose handler fails once, and redeliveries of the earlier rounds' messages. Every
// message must take effect exactly once, and the fast path must carry the large majority of new
// messages.
func TestFastPathOwnershipRespectedProcessesEachMessageOnce(t *testing.T) {
	const runs, rounds, partitions, perRound, workers = 2, 3, 4, 250, 6
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	var newIDs, fastHits, fastRecorded, fps, inFlight, lwtPath atomic.Uint64
	var warmKeys []uint64
	var warmTime []time.Duration
	var wmu sync.Mutex
	for run := range runs {
		topic := fmt.Sprintf("orders-%d", run)
		fx := &effects{runs: map[string]int{}, applied: map[string]int{}, failures: map[string]int{}}
		handler := func(_ context.Context, m guard.Message) error {
			var p, r, i int
			fmt.Sscanf(m.ID, "p%d-r%d-%d", &p, &r, &i)
			if n := fx.run(m.ID); i%20 == 5 && n == 1 {
				fx.fail(m.ID)
				return errors.New("fails once")
			}
			fx.apply(m.ID)
			return nil
		}
		for round := range rounds {
			epoch := uint64(round + 1)
			var wg sync.WaitGroup
			for p := range partitions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					scope := guard.Scope{Group: "billing", Topic: topic, Partition: int32(p)}
					g := guardOn(t, session, ks) // a restarted process: nothing in memory
					pre := newPreCheck(t, scope)
					if !assert.NoError(t, g.Own(ctx, scope, epoch, pre)) {
						return
					}
					st := pre.Stats()
					wmu.Lock()
					warmKeys, warmTime = append(warmKeys, st.WarmUpKeys), append(warmTime, st.WarmUpDuration)
					wmu.Unlock()

					var stream [][]guard.Message // deliveries; a group of several is concurrent
					var later []guard.Message
					for i := range perRound {
						m := guard.Message{Scope: scope, ID: fmt.Sprintf("p%d-r%d-%d", p, round, i), Payload: []byte(fmt.Sprint("body-", i))}
						switch i % 10 {
						case 0:
							stream = append(stream, []guard.Message{m, m})
						case 1:
							stream = append(stream, []guard.Message{m})
							later = append(later, m)
						default:
							stream = append(stream, []guard.Message{m})
						}
						if round > 0 && i%5 == 0 { // redelivered after the restart
							old := guard.Message{Scope: scope, ID: fmt.Sprintf("p%d-r%d-%d", p, round-1, i+1), Payload: []byte(fmt.Sprint("body-", i+1))}
							stream = append(stream, []guard.Message{old})
						}
					}
					for _, m := range later {
						stream = append(stream, []guard.Message{m})
					}
					work := make(chan []guard.Message)
					var ww sync.WaitGroup
					for range workers {
						ww.Add(1)
						go func() {
							defer ww.Done()
							for group := range work {
								var gw sync.WaitGroup
								for _, m := range group {
									gw.Add(1)
									go func() { defer gw.Done(); deliver(t, ctx, g, m, handler) }()
								}
								gw.Wait()
							}
						}()
					}
					for _, group := range stream {
						work <- group
					}
					close(work)
					ww.Wait()
					s := g.Stats()
					newIDs.Add(perRound)
					fastHits.Add(uint64(s.FastPath))
					fastRecorded.Add(uint64(s.FastPath - s.FastPathFailed))
					fps.Add(uint64(s.FalsePositives))
					inFlight.Add(uint64(s.InFlight))
					lwtPath.Add(uint64(s.FastPathLWT))
					assert.Zero(t, s.StaleEpoch, "ownership never moved during a handler")
					g.Disown(scope) // the process stops
				}()
			}
			wg.Wait()
		}
		for p := range partitions {
			for round := range rounds {
				for i := range perRound {
					id := fmt.Sprintf("p%d-r%d-%d", p, round, i)
					require.Equal(t, 1, fx.applied[id], "%s/%s took effect once", topic, id)
				}
			}
		}
	}
	frac := float64(fastHits.Load()) / float64(newIDs.Load())
	t.Logf("runs %d x rounds %d x partitions %d: %d new messages; fast path taken for %d (%.1f%%), recorded by it %d (%.1f%%); LWT path %d deliveries; observed false positives %d (failed fast paths included); in-process redeliveries answered in progress %d",
		runs, rounds, partitions, newIDs.Load(), fastHits.Load(), 100*frac, fastRecorded.Load(),
		100*float64(fastRecorded.Load())/float64(newIDs.Load()), lwtPath.Load(), fps.Load(), inFlight.Load())
	t.Logf("warm-up keys per consumer %v, durations %v", warmKeys, warmTime)
	require.GreaterOrEqual(t, frac, 0.9, "the fast path carries the large majority of new messages once warm")
	require.Positive(t, fps.Load(), "failed fast paths come back through the LWT path and are observed")
}

// TestFastPathInFlightRedeliveryGetsInProgress delivers a message again while its fast-path
// handler runs: the table has no row yet, so only the in-process flights set keeps the handler
// from running twice.
func TestFastPathInFlightRedeliveryGetsInProgress(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	g := guardOn(t, session, ks)
	scope := guard.Scope{Group: "g", Topic: "t", Partition: 1}
	pre := newPreCheck(t, scope)
	require.NoError(t, g.Own(ctx, scope, 1, pre))
	defer g.Disown(scope)
	m := guard.Message{Scope: scope, ID: "m1", Payload: []byte("x")}
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	slow := func(context.Context, guard.Message) error {
		runs.Add(1)
		close(started)
		<-release
		return nil
	}
	done := make(chan guard.Outcome, 1)
	go func() {
		out, err := g.Process(ctx, m, slow)
		assert.NoError(t, err)
		done <- out
	}()
	<-started
	for range 8 {
		out, err := g.Process(ctx, m, func(context.Context, guard.Message) error { runs.Add(1); return nil })
		require.Equal(t, guard.InProgress, out)
		require.ErrorIs(t, err, lwt.ErrInProgress)
	}
	close(release)
	require.Equal(t, guard.Processed, <-done)
	out, err := g.Process(ctx, m, func(context.Context, guard.Message) error { runs.Add(1); return nil })
	require.NoError(t, err)
	require.Equal(t, guard.Duplicate, out, "after it, the LWT path finds the fast path's record")
	require.Equal(t, int32(1), runs.Load())
	s := g.Stats()
	require.Equal(t, int64(1), s.FastPath)
	require.Equal(t, int64(8), s.InFlight)
	require.Zero(t, s.FalsePositives, "the record existed")
	require.Equal(t, uint64(1), pre.Stats().WarmUps)
}

// violation runs each of n messages through guards a and b at once and returns the handler
// runs and the Processed outcomes.
func violation(t *testing.T, ctx context.Context, a, b *guard.Guard, scope guard.Scope, prefix string, n int) (runs, processed int) {
	var r, p atomic.Int64
	h := func(context.Context, guard.Message) error { r.Add(1); return nil }
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		m := guard.Message{Scope: scope, ID: fmt.Sprint(prefix, i), Payload: []byte("x")}
		for _, g := range []*guard.Guard{a, b} {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				for {
					out, err := g.Process(ctx, m, h)
					if out == guard.Processed {
						p.Add(1)
					}
					if out == guard.Processed || out == guard.Duplicate {
						return
					}
					if out != guard.InProgress && !errors.Is(err, lwt.ErrInProgress) {
						// A strict consumer whose Complete met the fast path's record: its
						// handler ran, its lease is reported lost, and the redelivery replays.
						if !assert.ErrorContains(t, err, "lease") {
							return
						}
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()
	return int(r.Load()), int(p.Load())
}

// TestFastPathOwnershipViolatedDuplicates: a second owner at the same epoch is refused by the
// server (ErrSuperseded). A fast-path owner beside a strict consumer that ignores ownership is
// still a violation, whose duplicate rate is measured and logged. With the default settings (no
// Own), the LWT path admits no duplicate and no fast path is taken.
func TestFastPathOwnershipViolatedDuplicates(t *testing.T) {
	t.Parallel()
	const n = 300
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	scope := guard.Scope{Group: "g", Topic: "violated", Partition: 0}

	// Two owners at one epoch cannot both hold the scope: the server has it at 1 already.
	a, b := guardOn(t, session, ks), guardOn(t, session, ks)
	require.NoError(t, a.Own(ctx, scope, 1, newPreCheck(t, scope)))
	require.ErrorIs(t, b.Own(ctx, scope, 1, newPreCheck(t, scope)), lwt.ErrSuperseded)
	b.Disown(scope)

	c := guardOn(t, session, ks) // strict: the LWT path for every message
	runs, processed := violation(t, ctx, a, c, scope, "mixed-", n)
	cs := c.Stats()
	t.Logf("one fast path, one strict consumer: %d messages, %d handler runs, %d duplicates (%.1f%%); strict claims %d, lease lost %d",
		n, runs, runs-n, 100*float64(runs-n)/n, cs.Claims, cs.LeaseLost)
	require.Equal(t, runs, processed+int(cs.LeaseLost), "a run is reported processed or, when the plain write beat the Complete, lease lost")

	a.Disown(scope)
	d, e := guardOn(t, session, ks), guardOn(t, session, ks) // the defaults: no Own
	runs, _ = violation(t, ctx, d, e, scope, "strict-", n)
	t.Logf("default settings: %d messages, %d handler runs, fast paths %d", n, runs, d.Stats().FastPath+e.Stats().FastPath)
	require.Equal(t, n, runs, "no duplicate without the fast path")
	require.Zero(t, d.Stats().FastPath+e.Stats().FastPath, "the fast path is off unless the scope is owned")
}

// TestFastPathStopsWhenOwnershipMoves: after Disown the pre-check no longer answers clearly
// new; a handler that returns after ownership moved records the message with a conditional
// write, which finds a record the new owner made.
func TestFastPathStopsWhenOwnershipMoves(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	scope := guard.Scope{Group: "g", Topic: "moves", Partition: 3}
	g := guardOn(t, session, ks)
	pre := newPreCheck(t, scope)
	require.NoError(t, g.Own(ctx, scope, 5, pre))
	require.ErrorIs(t, g.Own(ctx, scope, 5, pre), bloom.ErrStaleEpoch, "an epoch must grow")
	require.NoError(t, g.Own(ctx, scope, 6, pre))

	// Disowned while the handler runs: the conditional write applies (nobody else has it).
	m1 := guard.Message{Scope: scope, ID: "m1"}
	out, err := g.Process(ctx, m1, func(context.Context, guard.Message) error { g.Disown(scope); return nil })
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	s := g.Stats()
	require.Equal(t, int64(1), s.FastPath)
	require.Equal(t, int64(1), s.StaleEpoch)
	require.Zero(t, s.StaleConflicts)
	require.Equal(t, bloom.Cold, pre.Stats().State)
	require.False(t, pre.Check("never-seen").ClearlyNew(), "a disowned pre-check answers no clearly new")
	out, err = g.Process(ctx, guard.Message{Scope: scope, ID: "m2"}, func(context.Context, guard.Message) error { return nil })
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	require.Equal(t, int64(1), g.Stats().FastPath, "m2 took the LWT path")

	// Ownership moves to another process that processes the message while the stale owner's
	// handler still runs: the stale owner's conditional write finds the record.
	require.NoError(t, g.Own(ctx, scope, 7, pre))
	other := guardOn(t, session, ks)
	m3 := guard.Message{Scope: scope, ID: "m3"}
	out, err = g.Process(ctx, m3, func(context.Context, guard.Message) error {
		g.Disown(scope)
		o, err := other.Process(ctx, m3, func(context.Context, guard.Message) error { return nil })
		if err != nil || o != guard.Processed {
			return fmt.Errorf("the new owner got %v: %w", o, err) // fails the assertions below
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	s = g.Stats()
	require.Equal(t, int64(2), s.StaleEpoch)
	require.Equal(t, int64(1), s.StaleConflicts, "the handler ran in two places and the guard says so")
	var epoch *int64
	var status string
	require.NoError(t, session.Query(`SELECT epoch, status FROM processed_messages WHERE consumer_group = ? AND topic = ? AND partition = ? AND message_id = ?`,
		scope.Group, scope.Topic, scope.Partition, m3.ID).Scan(&epoch, &status))
	require.Nil(t, epoch, "the new owner's LWT record was not overwritten")
	require.Equal(t, "COMPLETED", status)
}
