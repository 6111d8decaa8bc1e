package counters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

func newStore(t *testing.T, opts ...Option) (*Store, *gocql.Session, string) {
	t.Helper()
	session, ks := testnode.NewSession(t)
	s, err := New(session, append([]Option{WithKeyspace(ks)}, opts...)...)
	require.NoError(t, err)
	return s, session, ks
}

func TestIncrementAppliesOnceUnderConcurrentRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	const ops, retries = 40, 6
	var applied, unconfirmed [ops]atomic.Int32
	var wg sync.WaitGroup
	for i := range ops {
		for range retries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := s.Increment(ctx, Op{Counter: "c", ID: fmt.Sprint("op-", i), Delta: int64(i + 1)})
				switch {
				case errors.Is(err, ErrUnconfirmed): // a retry that met the first attempt mid-flight
					unconfirmed[i].Add(1)
				case err != nil:
					t.Errorf("op %d: %v", i, err)
				case out == Applied:
					applied[i].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	var want int64
	for i := range ops {
		require.EqualValues(t, 1, applied[i].Load(), "op %d applied once", i)
		want += int64(i + 1)
	}
	v, err := s.Value(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, want, v)
	for i := range ops { // every later retry is a duplicate
		out, err := s.Increment(ctx, Op{Counter: "c", ID: fmt.Sprint("op-", i), Delta: int64(i + 1)})
		require.NoError(t, err)
		require.Equal(t, Duplicate, out)
	}
	pending, err := s.ListUnapplied(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Minute), 100)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// TestCrashWindowIsReportedForRepair stops one increment after its claim and another after its
// counter update, as a crash would, and shows what each leaves behind.
func TestCrashWindowIsReportedForRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	crash := errors.New("crash")
	start := time.Now().Add(-time.Minute)

	s.hooks.afterClaim = func() error { return crash }
	_, err := s.Increment(ctx, Op{Counter: "c", ID: "before-increment", Delta: 10})
	require.ErrorIs(t, err, crash)
	s.hooks = hooks{afterIncrement: func() error { return crash }}
	_, err = s.Increment(ctx, Op{Counter: "c", ID: "after-increment", Delta: 100})
	require.ErrorIs(t, err, crash)
	s.hooks = hooks{}
	out, err := s.Increment(ctx, Op{Counter: "c", ID: "clean", Delta: 1000})
	require.NoError(t, err)
	require.Equal(t, Applied, out)

	v, err := s.Value(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1100, v, "the first crash lost its increment, the second kept it")

	for _, id := range []string{"before-increment", "after-increment"} {
		delta := map[string]int64{"before-increment": 10, "after-increment": 100}[id]
		_, err := s.Increment(ctx, Op{Counter: "c", ID: id, Delta: delta})
		require.ErrorIs(t, err, ErrUnconfirmed, "a retry cannot tell whether %s was incremented", id)
	}
	v, err = s.Value(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1100, v, "retries of unconfirmed operations change nothing")

	pending, err := s.ListUnapplied(ctx, start, time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	got := map[string]int64{}
	for _, c := range pending {
		got[c.OpID] = c.Delta
		require.Equal(t, "c", c.Counter)
		require.False(t, c.ClaimedAt.IsZero())
	}
	require.Equal(t, map[string]int64{"before-increment": 10, "after-increment": 100}, got,
		"the repair listing reports both crashed operations and not the clean one")
	t.Logf("repair listing: %+v", pending)
}

func TestShadowModeReportsDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	// Every operation carries one time: the grace period admits them all, however slow the node.
	log, err := events.NewLog(session, events.WithKeyspace(ks), events.WithGracePeriod(time.Hour))
	require.NoError(t, err)
	s, err := New(session, WithKeyspace(ks), WithShadow(log))
	require.NoError(t, err)
	now := time.Now()
	for i := range 5 {
		op := Op{Counter: "c", ID: fmt.Sprint("op-", i), Delta: 2, Time: now}
		_, err := s.Increment(ctx, op)
		require.NoError(t, err)
		_, err = s.Increment(ctx, op)
		require.NoError(t, err)
	}
	d, err := s.Drift(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, Drift{Native: 10, Log: 10}, d)

	s.hooks.afterClaim = func() error { return errors.New("crash") }
	_, err = s.Increment(ctx, Op{Counter: "c", ID: "lost", Delta: 7, Time: now})
	require.Error(t, err)
	d, err = s.Drift(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, -7, d.Diff(), "the native counter missed the crashed increment; the log did not")

	_, err = s.Increment(ctx, Op{Counter: "c", ID: "no-time", Delta: 1})
	require.ErrorIs(t, err, events.ErrMissingEventTime)
	plain, err := New(session, WithKeyspace(ks))
	require.NoError(t, err)
	_, err = plain.Drift(ctx, "c")
	require.ErrorIs(t, err, ErrInvalidOption)
}

func TestBadInputGivesTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newStore(t)
	_, err := s.Increment(ctx, Op{Counter: "c", ID: "x", Delta: 1})
	require.NoError(t, err)
	cases := []struct {
		op   Op
		want error
	}{
		{Op{ID: "x"}, ErrInvalidCounter},
		{Op{Counter: strings.Repeat("c", 257), ID: "x"}, ErrInvalidCounter},
		{Op{Counter: "c"}, ErrInvalidOpID},
		{Op{Counter: "c", ID: "\xfe"}, ErrInvalidOpID},
		{Op{Counter: "c", ID: "x", Delta: 2}, ErrOpReuse},
	}
	for _, tc := range cases {
		_, err := s.Increment(ctx, tc.op)
		require.ErrorIs(t, err, tc.want, "%+v", tc.op)
	}
	v, err := s.Value(ctx, "c")
	require.NoError(t, err)
	require.EqualValues(t, 1, v, "nothing stored was changed")
	_, err = s.Value(ctx, "")
	require.ErrorIs(t, err, ErrInvalidCounter)
	_, err = s.ListUnapplied(ctx, time.Now(), time.Now().Add(time.Hour), 0)
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = s.ListUnapplied(ctx, time.Now(), time.Now().Add(-time.Hour), 10)
	require.ErrorIs(t, err, ErrInvalidOption)
	for want, o := range map[string]Option{
		"counters: WithRetention(0s): ": WithRetention(0), "counters: WithShards(0): ": WithShards(0),
		"counters: WithShards(5000): ": WithShards(5000), "counters: WithClock(nil): ": WithClock(nil),
		"counters: WithSerialConsistency(":    WithSerialConsistency(gocql.SerialConsistency(1)),
		`counters: WithKeyspace("no such"): `: WithKeyspace("no such"), `counters: WithTables("a", "b", "-"): `: WithTables("a", "b", "-"),
		"counters: WithIndexBucket(7m0s): ": WithIndexBucket(7 * time.Minute), "counters: WithShadow(nil): ": WithShadow(nil),
		"counters: option 0: nil": nil,
	} {
		_, err := New(&gocql.Session{}, o)
		require.ErrorIs(t, err, ErrInvalidOption)
		require.True(t, strings.HasPrefix(err.Error(), want), "%v does not begin %q", err, want)
	}
	_, err = New(nil)
	require.ErrorIs(t, err, ErrInvalidOption)
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "op", "\xff\xfe", strings.Repeat("x", 256), strings.Repeat("x", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := ValidateCounter(s); err != nil && !errors.Is(err, ErrInvalidCounter) {
			t.Fatal(err)
		}
		if err := ValidateOpID(s); err != nil && !errors.Is(err, ErrInvalidOpID) {
			t.Fatal(err)
		}
		if (s == "" || len(s) > 256) && ValidateOpID(s) == nil {
			t.Fatalf("accepted %q", s)
		}
	})
}
