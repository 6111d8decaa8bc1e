package guard_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/testnode"
)

// isRecordWrite reports whether stmt is a fast-path record's write: a plain insert into the
// bucketed table.
func isRecordWrite(stmt string) bool {
	return strings.HasPrefix(stmt, "INSERT") && strings.Contains(stmt, "processed_messages_bucketed") &&
		!strings.Contains(stmt, " IF ")
}

// statementLog is a gocql query and batch observer that keeps each statement with its start.
type statementLog struct {
	mu    sync.Mutex
	stmts []sent
}

type sent struct {
	stmt  string
	start time.Time
}

func (l *statementLog) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, sent{q.Statement, q.Start})
}

func (l *statementLog) ObserveBatch(_ context.Context, b gocql.ObservedBatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, sent{strings.Join(b.Statements, "; "), b.Start})
}

// between returns the statements started after from and before the first record write started
// after from, leaving out the ownership's renewals (a goroutine of their own), and whether a
// record write was found.
func (l *statementLog) between(from time.Time) (stmts []string, found bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var write time.Time
	for _, s := range l.stmts {
		if isRecordWrite(s.stmt) && s.start.After(from) && (write.IsZero() || s.start.Before(write)) {
			write = s.start
		}
	}
	if write.IsZero() {
		return nil, false
	}
	for _, s := range l.stmts {
		if s.start.After(from) && s.start.Before(write) && !strings.Contains(s.stmt, "scope_owners") {
			stmts = append(stmts, s.stmt)
		}
	}
	return stmts, true
}

// TestFastPathSendsNothingBetweenCheckAndWrite: from the end of a fast-path handler (after which
// the ownership check runs) to its record's write, the guard sends no statement, when its
// group's layout must be read and recorded first (the group's first message) and when the layout
// it read must be read again (five minutes on), through Process and ProcessBatch. The record's
// partition is resolved before the handler. Before, the layout's serial read and conditional
// write ran after the check.
func TestFastPathSendsNothingBetweenCheckAndWrite(t *testing.T) {
	t.Parallel()
	_, ks := testnode.NewSession(t)
	log := &statementLog{}
	c := testnode.Cluster(t)
	c.Keyspace = ks
	c.QueryObserver, c.BatchObserver = log, log
	session := testnode.Connect(t, c)
	t.Cleanup(session.Close)
	clock := testnode.NewClock(time.Now())
	g := guardOn(t, session, ks, guard.WithClock(clock.Now), guard.WithoutClockCheck(), guard.WithOwnership(3*time.Second, 1500*time.Millisecond))
	ctx := context.Background()
	scope := guard.Scope{Group: "fresh-group", Topic: "t", Partition: 1}
	require.NoError(t, g.Own(ctx, scope, 1, newPreCheck(t, scope)))
	defer g.Disown(scope)

	var mu sync.Mutex
	var handlerEnd time.Time
	handler := func(context.Context, guard.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handlerEnd = time.Now()
		return nil
	}
	for i, via := range []string{"Process, the group's first message", "Process, the layout read again", "ProcessBatch, the layout read again"} {
		if i > 0 {
			clock.Advance(5 * time.Minute) // past the layouts' validity (LayoutSwitchDelay/2 less the skew)
		}
		m := guard.Message{Scope: scope, ID: via, Payload: []byte("x"), Time: clock.Now()}
		if strings.HasPrefix(via, "ProcessBatch") {
			res, err := g.ProcessBatch(ctx, []guard.Message{m}, handler)
			require.NoError(t, err)
			require.Equal(t, guard.Processed, res[0].Outcome, "%s: %v", via, res[0].Err)
		} else {
			out, err := g.Process(ctx, m, handler)
			require.NoError(t, err, via)
			require.Equal(t, guard.Processed, out, via)
		}
		mu.Lock()
		end := handlerEnd
		mu.Unlock()
		stmts, found := log.between(end)
		require.True(t, found, "%s: the record's write was observed", via)
		assert.Empty(t, stmts, "%s: statements sent between the ownership check and the record's write", via)
	}
	require.Equal(t, int64(3), g.Stats().FastPath, "every message took the fast path")
}

// TestFastPathRecordNotSentAfterTheDeadline: a fast-path record whose write is held up after its
// ownership check (a hook where the driver picks the host, as a pause of the process would) until
// the lease's deadline has passed is never sent: the call fails, no record is in the table, and
// the redelivery runs the handler again, as after a crash between the handler and the write.
// Before, the write's context was the commit timeout (10 s), and the late write was sent and
// applied.
func TestFastPathRecordNotSentAfterTheDeadline(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"Process", "ProcessBatch"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			notSentAfterDeadline(t, via)
		})
	}
}

func notSentAfterDeadline(t *testing.T, via string) {
	const lease, margin = 3 * time.Second, 1500 * time.Millisecond
	_, ks := testnode.NewSession(t)
	var hold atomic.Bool
	c := testnode.Cluster(t)
	c.Keyspace = ks
	testnode.HookSends(c, func(stmt string) {
		if isRecordWrite(stmt) && hold.CompareAndSwap(true, false) {
			time.Sleep(lease - margin + 500*time.Millisecond) // past any deadline the check could find
		}
	})
	session := testnode.Connect(t, c)
	t.Cleanup(session.Close)
	g := guardOn(t, session, ks, guard.WithOwnership(lease, margin))
	ctx := context.Background()
	scope := guard.Scope{Group: "g", Topic: "late", Partition: 2}
	require.NoError(t, g.Own(ctx, scope, 1, newPreCheck(t, scope)))
	defer g.Disown(scope)
	var runs atomic.Int64
	handler := func(context.Context, guard.Message) error {
		runs.Add(1)
		return nil
	}
	process := func(m guard.Message) (guard.Outcome, error) {
		if via == "Process" {
			return g.Process(ctx, m, handler)
		}
		res, err := g.ProcessBatch(ctx, []guard.Message{m}, handler)
		require.NoError(t, err)
		return res[0].Outcome, res[0].Err
	}
	m := guard.Message{Scope: scope, ID: "late", Payload: []byte("x"), Time: time.Now()}
	hold.Store(true)
	out, err := process(m)
	require.False(t, hold.Load(), "the record's write was held up")
	require.Equal(t, guard.Failed, out)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "deadline passed")
	var n int
	require.NoError(t, session.Query(`SELECT count(*) FROM processed_messages_bucketed`).WithContext(ctx).Scan(&n))
	require.Zero(t, n, "the record written after the deadline")

	out, err = process(m)
	require.NoError(t, err)
	require.Equal(t, guard.Processed, out, "the redelivery")
	require.Equal(t, int64(2), runs.Load(), "the handler ran again: its first run left no record")
}
