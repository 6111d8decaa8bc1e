package lwt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/faultproxy"
)

// lwtOps counts the conditional writes and serial reads a store sends, by Op.
type lwtOps struct {
	mu  sync.Mutex
	ops map[string]int
}

func (o *lwtOps) Observe(e Observation) {
	if e.Kind != ObservedLWT {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[string]int{}
	}
	o.ops[e.Op]++
}

func (o *lwtOps) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, v := range o.ops {
		out[k] = v
	}
	return out
}

// TestRepeatableCommitsInOneRound: a new key costs one conditional insert, and nothing else,
// which writes the COMPLETED record with the result and the fingerprint; a duplicate replays it.
func TestRepeatableCommitsInOneRound(t *testing.T) {
	t.Parallel()
	ops := &lwtOps{}
	s, _, _ := newTestStore(t, WithObserver(ops))
	ctx := ctxT(t)
	key := IdempotencyKey("one-round", "new")
	res, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		c, ok := ClaimFromContext(ctx)
		if assert.True(t, ok, "the run names the record it will commit") {
			assert.False(t, c.CommitBy.IsZero())
		}
		return []byte("order 1"), nil
	}, WithRequest([]byte("req")), WithRepeatableFunction())
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"commit": 1}, ops.snapshot(), "one Paxos round")
	assert.False(t, res.Replay)
	assert.True(t, res.Created)
	assert.Equal(t, "order 1", string(res.Value))
	assert.GreaterOrEqual(t, res.Fence, int64(1)<<32, "a random fence, never a counted one")

	rec := readRecord(t, s, key)
	assert.Equal(t, StatusCompleted, rec.Status)
	assert.Equal(t, Fingerprint([]byte("req")), rec.Fingerprint)
	assert.Equal(t, res.Fence, rec.Fence)
	assert.Equal(t, 1, rec.Attempts)
	assert.Equal(t, "order 1", string(rec.Result))

	for _, opts := range [][]CallOption{{WithRequest([]byte("req")), WithRepeatableFunction()}, {WithRequest([]byte("req"))}} {
		again, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("other"), nil }, opts...)
		require.NoError(t, err)
		assert.True(t, again.Replay)
		assert.Equal(t, "order 1", string(again.Value))
	}
}

// TestRepeatableRace: 64 goroutines, spread over 8 stores (processes) on one session, run one
// new key at once: the function may run many times, the key is committed once, and every caller
// gets the committed result, all but the committing one flagged as a replay.
func TestRepeatableRace(t *testing.T) {
	t.Parallel()
	first, session, ks := newTestStore(t)
	stores := []*Store{first}
	for range 7 {
		s, err := NewStore(session, IdempotencyKeys(ks))
		require.NoError(t, err)
		stores = append(stores, s)
	}
	ctx := ctxT(t)
	for round := range 3 {
		key := IdempotencyKey("race", fmt.Sprintf("key-%d", round))
		const workers = 64
		var runs, fresh atomic.Int32
		values := make([]string, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					res, err := stores[w%len(stores)].ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
						runs.Add(1)
						return []byte(fmt.Sprintf("worker %d", w)), nil
					}, WithRequest([]byte("same")), WithRepeatableFunction())
					if errors.Is(err, ErrOutcomeUnknown) {
						continue // the documented answer: the same call again
					}
					if !assert.NoError(t, err) {
						return
					}
					if !res.Replay {
						fresh.Add(1)
					}
					values[w] = string(res.Value)
					return
				}
			}()
		}
		close(start)
		wg.Wait()
		rec := readRecord(t, first, key)
		assert.EqualValues(t, 1, fresh.Load(), "one caller committed")
		for w, v := range values {
			assert.Equal(t, string(rec.Result), v, "worker %d got another result", w)
		}
		var completions int64
		for _, s := range stores {
			completions += s.Stats().Completions
		}
		assert.EqualValues(t, round+1, completions, "the commit happened once per key")
		t.Logf("round %d: the function ran %d times for one commit", round, runs.Load())
	}
}

// TestRepeatableCrashBeforeCommit: the caller dies after the function ran and before its commit
// was sent (runtime.Goexit, which unwinds the goroutine as a crash ends it): nothing is
// recorded, a retry runs the function again and commits once.
func TestRepeatableCrashBeforeCommit(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	key := IdempotencyKey("crash", "between")
	var runs atomic.Int32
	crashed := make(chan struct{})
	go func() {
		defer close(crashed)
		_, _ = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
			runs.Add(1)
			runtime.Goexit()
			return nil, nil
		}, WithRepeatableFunction())
		t.Error("ExecuteOnce returned after its goroutine ended")
	}()
	<-crashed
	assert.EqualValues(t, 1, runs.Load(), "the function ran")
	_, err := s.Get(ctx, key)
	require.ErrorIs(t, err, ErrNotFound, "the commit never happened")

	res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("retried"), nil },
		WithRepeatableFunction())
	require.NoError(t, err)
	assert.False(t, res.Replay)
	assert.EqualValues(t, 2, runs.Load(), "the retry ran it again")
	again, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { runs.Add(1); return nil, nil }, WithRepeatableFunction())
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.Equal(t, "retried", string(again.Value))
	assert.EqualValues(t, 1, s.Stats().Completions, "committed once")
}

// TestRepeatableKeyReuse: the same key with another request is ErrKeyReuse, whichever mode wrote
// the record, and the record is untouched.
func TestRepeatableKeyReuse(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	ctx := ctxT(t)
	for i, firstOpts := range [][]CallOption{{WithRequest([]byte("a")), WithRepeatableFunction()}, {WithRequest([]byte("a"))}} {
		key := IdempotencyKey("reuse", fmt.Sprint(i))
		_, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("first"), nil }, firstOpts...)
		require.NoError(t, err)
		_, err = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("second"), nil },
			WithRequest([]byte("b")), WithRepeatableFunction())
		assert.ErrorIs(t, err, ErrKeyReuse)
		assert.Equal(t, "first", string(readRecord(t, s, key).Result))
	}
}

// TestRepeatableMeetsClaims: a live claim of a call without the option answers ErrInProgress
// (or, with WithWait, its result once stored); a RELEASED record, and a STARTED one whose lease
// the server expired, are claimed as ExecuteOnce claims them, and the function runs again under
// the claim.
func TestRepeatableMeetsClaims(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t, WithLease(time.Second))
	ctx := ctxT(t)
	fn := func(v string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { return []byte(v), nil }
	}

	live := IdempotencyKey("claims", "live")
	c, _, err := s.Begin(ctx, live, nil)
	require.NoError(t, err)
	_, err = s.ExecuteOnce(ctx, live, fn("mine"), WithRepeatableFunction())
	assert.ErrorIs(t, err, ErrInProgress)
	go func() {
		time.Sleep(300 * time.Millisecond)
		assert.NoError(t, s.Complete(context.WithoutCancel(ctx), c, []byte("theirs")))
	}()
	res, err := s.ExecuteOnce(ctx, live, fn("mine"), WithRepeatableFunction(), WithWait())
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.Equal(t, "theirs", string(res.Value))

	released := IdempotencyKey("claims", "released")
	c, _, err = s.Begin(ctx, released, nil)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, c, []byte("retry")))
	var runs atomic.Int32
	res, err = s.ExecuteOnce(ctx, released, func(context.Context) ([]byte, error) { runs.Add(1); return []byte("again"), nil },
		WithRepeatableFunction())
	require.NoError(t, err)
	assert.False(t, res.Replay)
	assert.Equal(t, 2, res.Attempts, "claimed again, the attempts counted on")
	assert.EqualValues(t, 2, res.Fence)
	assert.EqualValues(t, 2, runs.Load(), "ran once unclaimed, once under the claim")
	assert.Equal(t, "again", string(readRecord(t, s, released).Result))

	expired := IdempotencyKey("claims", "expired")
	_, _, err = s.Begin(ctx, expired, nil)
	require.NoError(t, err)
	waitLeaseExpired(t, s, expired)
	res, err = s.ExecuteOnce(ctx, expired, fn("taken over"), WithRepeatableFunction())
	require.NoError(t, err)
	assert.Equal(t, 2, res.Attempts)
	assert.Equal(t, "taken over", string(readRecord(t, s, expired).Result))
	assert.EqualValues(t, 1, s.Stats().Takeovers)
}

// TestRepeatableFailures: a permanent error is committed as FAILED in the one insert and
// replayed; any other error, a cell that cannot be encoded, or a result that comes after the
// run's lease writes nothing.
func TestRepeatableFailures(t *testing.T) {
	t.Parallel()
	s, _ := newCompletionStore(t)
	ctx := ctxT(t)
	perm := IdempotencyKey("fail", "permanent")
	_, err := s.ExecuteOnce(ctx, perm, func(context.Context) ([]byte, error) { return nil, Permanent(errors.New("card declined")) },
		WithRepeatableFunction())
	var fe *FailureError
	require.ErrorAs(t, err, &fe)
	assert.False(t, fe.Replay)
	_, err = s.ExecuteOnce(ctx, perm, func(context.Context) ([]byte, error) { return []byte("x"), nil }, WithRepeatableFunction())
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.Replay)
	assert.Equal(t, "card declined", fe.Message)

	boom := errors.New("boom")
	for name, fn := range map[string]func(context.Context) ([]byte, error){
		"error": func(context.Context) ([]byte, error) { return nil, boom },
		"cell": func(ctx context.Context) ([]byte, error) {
			c, _ := CompletionFromContext(ctx)
			_, err := c.LoadOrStore("outbox", failingCell{})
			return []byte("r"), err
		},
	} {
		key := IdempotencyKey("fail", name)
		_, err := s.ExecuteOnce(ctx, key, fn, WithRepeatableFunction())
		assert.Error(t, err, name)
		_, err = s.Get(ctx, key)
		assert.ErrorIs(t, err, ErrNotFound, "%s: nothing written", name)
	}
}

// TestRepeatableOutlivesLease: a result returned after the run's lease is not committed.
func TestRepeatableOutlivesLease(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t, WithLease(time.Second))
	ctx := ctxT(t)
	key := IdempotencyKey("slow", "run")
	_, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		return []byte("late"), nil
	}, WithRepeatableFunction())
	assert.ErrorIs(t, err, ErrLeaseLost)
	_, err = s.Get(ctx, key)
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestRepeatableCellsRideOnTheInsert: the cells a run sets are written by its one insert; a
// loser's are not.
func TestRepeatableCellsRideOnTheInsert(t *testing.T) {
	t.Parallel()
	s, read := newCompletionStore(t)
	ctx := ctxT(t)
	stage := func(v string) func(context.Context) ([]byte, error) {
		return func(ctx context.Context) ([]byte, error) {
			c, ok := CompletionFromContext(ctx)
			if !ok {
				return nil, errors.New("no completion")
			}
			_, err := c.LoadOrStore("outbox", cell(v))
			return []byte(v), err
		}
	}
	key := IdempotencyKey("cells", "one-round")
	_, err := s.ExecuteOnce(ctx, key, stage("winner's events"), WithRepeatableFunction())
	require.NoError(t, err)
	assert.Equal(t, "winner's events", string(read(key)))
	res, err := s.ExecuteOnce(ctx, key, stage("loser's events"), WithRepeatableFunction())
	require.NoError(t, err)
	assert.True(t, res.Replay)
	assert.Equal(t, "winner's events", string(read(key)))
}

// TestRepeatableUnknownOutcome: an insert whose response is lost is found applied by the serial
// read (the owner id is this attempt's alone); one whose request is lost is found absent and
// sent again. Either way the key is committed once, with this run's result.
func TestRepeatableUnknownOutcome(t *testing.T) {
	t.Parallel()
	s, direct, p := faultyStores(t)
	ctx := ctxT(t)
	for i, mode := range []faultproxy.Mode{faultproxy.DropResponse, faultproxy.DropRequest} {
		name := fmt.Sprintf("one-round-lost-%d", mode)
		key := IdempotencyKey("tenant", name)
		p.Arm(name, mode, 1, nil)
		res, err := s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) { return []byte("once"), nil }, WithRepeatableFunction())
		require.NoError(t, err, name)
		assert.Equal(t, i+1, p.Lost(), name)
		assert.False(t, res.Replay, name)
		assert.Equal(t, "once", string(readRecord(t, direct, key).Result), name)
	}
	assert.EqualValues(t, 2, s.Stats().UnknownOutcomes)
	assert.EqualValues(t, 2, s.Stats().ResolvedOutcomes)
}
