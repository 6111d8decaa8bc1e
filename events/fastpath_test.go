package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/cassandratest"
	"github.com/cassdedup/cassdedup/events"
)

func guardOn(t testing.TB, session *gocql.Session, ks string, opts ...events.GuardOption) *events.Guard {
	t.Helper()
	g, err := events.NewGuard(session, append([]events.GuardOption{events.WithGuardKeyspace(ks),
		events.WithRetention(24 * time.Hour)}, opts...)...)
	require.NoError(t, err)
	return g
}

// newPreCheck sizes a filter for the tests' few thousand ids per scope, at a 0.1% rate, with a
// retention above the guard's 24 h.
func newPreCheck(t testing.TB, scope events.Scope) *bloom.PreCheck {
	t.Helper()
	p, err := bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", scope.Group, scope.Topic, scope.Partition),
		bloom.WithExpectedItems(20000), bloom.WithFalsePositiveRate(0.001), bloom.WithRetention(25*time.Hour))
	require.NoError(t, err)
	return p
}

// deliver redelivers m to g until the broker could acknowledge it.
func deliver(t testing.TB, ctx context.Context, g *events.Guard, m events.Message, h events.Handler) {
	for {
		out, err := g.Process(ctx, m, h)
		switch out {
		case events.Processed, events.Duplicate:
			require.NoError(t, err)
			return
		case events.InProgress:
			require.ErrorIs(t, err, events.ErrInProgress)
			time.Sleep(2 * time.Millisecond)
		case events.Failed:
			require.ErrorContains(t, err, "fails once")
		default:
			require.FailNow(t, "unexpected outcome", "%v: %v", out, err)
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
	session, ks := cassandratest.NewSession(t)
	ctx := context.Background()
	var newIDs, fastHits, fastRecorded, fps, inFlight, lwtPath atomic.Uint64
	var warmKeys []uint64
	var warmTime []time.Duration
	var wmu sync.Mutex
	for run := range runs {
		topic := fmt.Sprintf("orders-%d", run)
		fx := &effects{runs: map[string]int{}, applied: map[string]int{}, failures: map[string]int{}}
		handler := func(_ context.Context, m events.Message) error {
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
					scope := events.Scope{Group: "billing", Topic: topic, Partition: int32(p)}
					g := guardOn(t, session, ks) // a restarted process: nothing in memory
					pre := newPreCheck(t, scope)
					require.NoError(t, g.Own(ctx, scope, epoch, pre))
					st := pre.Stats()
					wmu.Lock()
					warmKeys, warmTime = append(warmKeys, st.WarmUpKeys), append(warmTime, st.WarmUpDuration)
					wmu.Unlock()

					var stream [][]events.Message // deliveries; a group of several is concurrent
					var later []events.Message
					for i := range perRound {
						m := events.Message{Scope: scope, ID: fmt.Sprintf("p%d-r%d-%d", p, round, i), Payload: []byte(fmt.Sprint("body-", i))}
						switch i % 10 {
						case 0:
							stream = append(stream, []events.Message{m, m})
						case 1:
							stream = append(stream, []events.Message{m})
							later = append(later, m)
						default:
							stream = append(stream, []events.Message{m})
						}
						if round > 0 && i%5 == 0 { // redelivered after the restart
							old := events.Message{Scope: scope, ID: fmt.Sprintf("p%d-r%d-%d", p, round-1, i+1), Payload: []byte(fmt.Sprint("body-", i+1))}
							stream = append(stream, []events.Message{old})
						}
					}
					for _, m := range later {
						stream = append(stream, []events.Message{m})
					}
					work := make(chan []events.Message)
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
					fastHits.Add(s.FastPath)
					fastRecorded.Add(s.FastPath - s.FastPathFailed)
					fps.Add(s.FalsePositives)
					inFlight.Add(s.InFlight)
					lwtPath.Add(s.LWTPath)
					require.Zero(t, s.StaleEpoch, "ownership never moved during a handler")
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
	session, ks := cassandratest.NewSession(t)
	ctx := context.Background()
	g := guardOn(t, session, ks)
	scope := events.Scope{Group: "g", Topic: "t", Partition: 1}
	require.NoError(t, g.Own(ctx, scope, 1, newPreCheck(t, scope)))
	m := events.Message{Scope: scope, ID: "m1", Payload: []byte("x")}
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	slow := func(context.Context, events.Message) error {
		runs.Add(1)
		close(started)
		<-release
		return nil
	}
	done := make(chan events.Outcome, 1)
	go func() {
		out, err := g.Process(ctx, m, slow)
		require.NoError(t, err)
		done <- out
	}()
	<-started
	for range 8 {
		out, err := g.Process(ctx, m, func(context.Context, events.Message) error { runs.Add(1); return nil })
		require.Equal(t, events.InProgress, out)
		require.ErrorIs(t, err, events.ErrInProgress)
	}
	close(release)
	require.Equal(t, events.Processed, <-done)
	out, err := g.Process(ctx, m, func(context.Context, events.Message) error { runs.Add(1); return nil })
	require.NoError(t, err)
	require.Equal(t, events.Duplicate, out, "after it, the LWT path finds the fast path's record")
	require.Equal(t, int32(1), runs.Load())
	s := g.Stats()
	require.Equal(t, uint64(1), s.FastPath)
	require.Equal(t, uint64(8), s.InFlight)
	require.Zero(t, s.FalsePositives, "the record existed")
	require.Equal(t, uint64(1), s.PreChecks[scope].WarmUps)
}
