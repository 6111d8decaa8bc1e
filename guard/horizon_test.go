package guard_test

import (
	"context"
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

// defaultOwner is a consumer process with every default but the clock: a guard and a pre-check
// of scope owned at epoch.
func defaultOwner(t *testing.T, session *gocql.Session, ks string, clock *testnode.Clock, scope guard.Scope, epoch uint64, opts ...guard.Option) *guard.Guard {
	t.Helper()
	g, err := guard.New(session, append([]guard.Option{guard.WithKeyspace(ks), guard.WithClock(clock.Now), guard.WithoutClockCheck()}, opts...)...)
	require.NoError(t, err)
	pre, err := bloom.NewPreCheck(fmt.Sprint(scope), bloom.WithClock(clock.Now))
	require.NoError(t, err)
	require.NoError(t, g.Own(context.Background(), scope, epoch, pre))
	t.Cleanup(func() { g.Disown(scope) })
	return g
}

// TestFastPathDuplicateAfterHorizonRunsOnce: with every default (a 1 h horizon in front of 7
// days of records), a duplicate delivered two hours later, to the same owner or to a new one,
// runs nothing, with a time of its own or without; the pre-check has forgotten the id, so the
// horizon rule sends it to the LWT path, which finds the record.
func TestFastPathDuplicateAfterHorizonRunsOnce(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	clock := testnode.NewClock(time.Now().Truncate(time.Second))
	scope := guard.Scope{Group: "g", Topic: "horizon", Partition: 2}
	g := defaultOwner(t, session, ks, clock, scope, 1)
	runs := map[string]int{}
	h := func(_ context.Context, m guard.Message) error { runs[m.ID]++; return nil }

	timed := guard.Message{Scope: scope, ID: "timed", Payload: []byte("x"), Time: clock.Now()}
	untimed := guard.Message{Scope: scope, ID: "untimed", Payload: []byte("y")}
	for _, m := range []guard.Message{timed, untimed} {
		out, err := g.Process(ctx, m, h)
		require.NoError(t, err)
		require.Equal(t, guard.Processed, out)
	}
	require.Equal(t, int64(1), g.Stats().FastPath, "the timed message took the fast path; the untimed one cannot be vouched for")

	clock.Advance(2 * time.Hour)
	duplicates := func(owner *guard.Guard) {
		for _, m := range []guard.Message{timed, untimed} {
			out, err := owner.Process(ctx, m, h)
			require.NoError(t, err)
			require.Equal(t, guard.Duplicate, out, m.ID)
		}
	}
	duplicates(g)
	// The scope changes hands (a superseded owner runs nothing of it, so g goes first): Disown
	// releases g's lease on the server, and the new owner need not wait for it.
	g.Disown(scope)
	fresh := defaultOwner(t, session, ks, clock, scope, 2)
	duplicates(fresh)
	require.Equal(t, map[string]int{"timed": 1, "untimed": 1}, runs)
	require.Equal(t, int64(1), g.Stats().FastPath+fresh.Stats().FastPath, "nothing older than the horizon took the fast path")

	// A message first delivered long after its time is vouched for by nobody: the LWT path.
	old := guard.Message{Scope: scope, ID: "old", Time: clock.Now().Add(-3 * time.Hour)}
	out, err := fresh.Process(ctx, old, h)
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out)
	require.Equal(t, int64(1), g.Stats().FastPath+fresh.Stats().FastPath)
}

// TestOwnRefusesAHorizonThatVouchesForNothing: a pre-check whose horizon is within the clock
// skew allowance could answer for no message; Own says so.
func TestOwnRefusesAHorizonThatVouchesForNothing(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	g := guardOn(t, session, ks)
	scope := guard.Scope{Group: "g", Topic: "short", Partition: 0}
	pre, err := bloom.NewPreCheck("short", bloom.WithRetention(90*time.Second))
	require.NoError(t, err)
	err = g.Own(context.Background(), scope, 1, pre)
	require.ErrorIs(t, err, lwt.ErrInvalidArgument)
	require.ErrorContains(t, err, "vouches for nothing")
}

// stopAt freezes the process that observes kind (and op, if set) for the first time: the
// observer blocks until the test ends, as a process that stopped there never goes on.
type stopAt struct {
	kind    lwt.ObservationKind
	op      string
	once    sync.Once
	reached chan struct{}
	resume  chan struct{}
	resumed sync.Once
}

func newStopAt(t *testing.T, kind lwt.ObservationKind, op string) *stopAt {
	s := &stopAt{kind: kind, op: op, reached: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(s.Resume)
	return s
}

// Resume lets the stopped call go on; calling it again is harmless. A test resumes its stopped
// owner before it disowns the scope: Disown waits for the fast-path writes in flight.
func (s *stopAt) Resume() { s.resumed.Do(func() { close(s.resume) }) }

// Observe implements lwt.Observer.
func (s *stopAt) Observe(o lwt.Observation) {
	if o.Kind != s.kind || (s.op != "" && o.Op != s.op) {
		return
	}
	s.once.Do(func() {
		close(s.reached)
		<-s.resume
	})
}

// TestFastPathStoppedBetweenStepsNeverRunsARecordedIDAgain stops a fast-path owner between each
// pair of steps of a message with a time (admitted by the pre-check, handler run, record
// written, answer given), then lets a new owner warm up and receive the redelivery. Once the
// record is written, the new owner's warm-up knows the id and the redelivery runs nothing;
// before it, nothing says the message was processed, and it runs (a handler that stopped after
// its effect but before the record is the window every at-least-once consumer has, on the LWT
// path too: there a redelivery runs it again once the lease has passed).
func TestFastPathStoppedBetweenStepsNeverRunsARecordedIDAgain(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	clock := testnode.NewClock(time.Now().Truncate(time.Second))
	for _, tc := range []struct {
		name     string
		stop     func(t *testing.T) (*stopAt, bool) // the observer; whether the handler stops
		recorded bool
	}{
		{"admitted", func(t *testing.T) (*stopAt, bool) { return newStopAt(t, lwt.ObservedFastPath, ""), false }, false},
		{"handler-ran", func(t *testing.T) (*stopAt, bool) { return newStopAt(t, lwt.ObservedFastPath, "never"), true }, false},
		{"record-written", func(t *testing.T) (*stopAt, bool) { return newStopAt(t, lwt.ObservedWrite, "put"), false }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a scope of its own; each waits out its stopped owner's lease
			scope := guard.Scope{Group: "g", Topic: "stop-" + tc.name, Partition: 0}
			stop, inHandler := tc.stop(t)
			var effects atomic.Int32
			dead := make(chan struct{})
			handlerStopped := make(chan struct{})
			first := defaultOwner(t, session, ks, clock, scope, 1, guard.WithObserver(stop))
			m := guard.Message{Scope: scope, ID: "m", Payload: []byte("p"), Time: clock.Now()}
			go func() {
				_, _ = first.Process(ctx, m, func(context.Context, guard.Message) error {
					select {
					case <-dead: // the test is over: this process stopped long ago
						return nil
					default:
					}
					effects.Add(1)
					if inHandler {
						close(handlerStopped)
						<-dead
					}
					return nil
				})
			}()
			if inHandler {
				<-handlerStopped
			} else {
				<-stop.reached
			}
			t.Cleanup(func() { stop.Resume(); close(dead); first.Disown(scope) })

			next := defaultOwner(t, session, ks, clock, scope, 2)
			out, err := next.Process(ctx, m, func(context.Context, guard.Message) error { effects.Add(1); return nil })
			require.NoError(t, err)
			if tc.recorded {
				assert.Equal(t, guard.Duplicate, out, "the record exists: the new owner must not run it")
				assert.Equal(t, int32(1), effects.Load())
			} else {
				assert.Equal(t, guard.Processed, out, "no record: the new owner processes it")
			}
			// From here on it is recorded, for every owner and every path. A superseded owner runs
			// nothing of the scope (ErrNoLease), so next hands it over before the third takes it.
			before := effects.Load()
			for _, epoch := range []uint64{0, 3} {
				g := next
				if epoch > 0 {
					next.Disown(scope)
					g = defaultOwner(t, session, ks, clock, scope, epoch)
				}
				out, err := g.Process(ctx, m, func(context.Context, guard.Message) error { effects.Add(1); return nil })
				require.NoError(t, err)
				assert.Equal(t, guard.Duplicate, out)
				res, err := g.ProcessBatch(ctx, []guard.Message{m}, func(context.Context, guard.Message) error { effects.Add(1); return nil })
				require.NoError(t, err)
				assert.Equal(t, guard.Duplicate, res[0].Outcome, "ProcessBatch finds the record too")
			}
			assert.Equal(t, before, effects.Load())
		})
	}
}
