package lwt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepeatableDuplicatesWaitInProcess: with a cache, the calls of a key that arrive while a
// repeatable run of it is in flight in the same process wait for it and are answered with
// what it committed: the function runs once and the node sees one insert, however many
// duplicates came. A run that commits nothing leaves the key to a waiter, which runs it; a
// waiter with another request gets ErrKeyReuse once the run committed.
func TestRepeatableDuplicatesWaitInProcess(t *testing.T) {
	t.Parallel()
	_, session, ks := newTestStore(t)
	ops := &lwtOps{}
	s, err := NewStore(session, IdempotencyKeys(ks), WithCache(1000), WithObserver(ops))
	require.NoError(t, err)
	ctx := ctxT(t)

	// waiters runs n calls of key beside a first one that holds its run until they all wait.
	waiters := func(key Key, first func(context.Context) ([]byte, error), n int, request func(w int) []byte) ([]Result, []error) {
		joined := s.Stats().Joined
		entered := make(chan struct{})
		release := make(chan struct{})
		res, errs := make([]Result, n+1), make([]error, n+1)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[0], errs[0] = s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
				close(entered)
				<-release
				return first(ctx)
			}, WithRequest(request(0)), WithRepeatableFunction())
		}()
		<-entered
		for w := 1; w <= n; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[w], errs[w] = s.ExecuteOnce(ctx, key, func(context.Context) ([]byte, error) {
					return []byte(fmt.Sprintf("waiter %d", w)), nil
				}, WithRequest(request(w)), WithRepeatableFunction())
			}()
		}
		// Released only once every duplicate waits for it: one that came after would be
		// answered by the cache before it looked for a run in flight.
		require.Eventually(t, func() bool { return s.Stats().Joined-joined >= int64(n) }, 10*time.Second, time.Millisecond)
		close(release)
		wg.Wait()
		return res, errs
	}
	same := func(int) []byte { return []byte("same") }

	t.Run("CommittedRunAnswersTheWaiters", func(t *testing.T) {
		key := IdempotencyKey("inprocess", "committed")
		before := ops.snapshot()["commit"]
		res, errs := waiters(key, func(context.Context) ([]byte, error) { return []byte("first"), nil }, 16, same)
		for w := range res {
			require.NoError(t, errs[w], "call %d", w)
			assert.Equal(t, "first", string(res[w].Value), "call %d", w)
		}
		assert.True(t, res[0].Created)
		for w := 1; w < len(res); w++ {
			assert.True(t, res[w].Replay && res[w].FromCache, "call %d was not answered by the run it waited for: %+v", w, res[w])
		}
		assert.Equal(t, 1, ops.snapshot()["commit"]-before, "one conditional insert for 17 calls")
	})

	t.Run("RunThatCommitsNothingLeavesTheKeyToAWaiter", func(t *testing.T) {
		key := IdempotencyKey("inprocess", "failed")
		transient := errors.New("transient")
		res, errs := waiters(key, func(context.Context) ([]byte, error) { return nil, transient }, 4, same)
		assert.ErrorIs(t, errs[0], transient)
		created := 0
		for w := 1; w < len(res); w++ {
			require.NoError(t, errs[w], "call %d", w)
			if res[w].Created {
				created++
			}
			assert.Equal(t, string(readRecord(t, s, key).Result), string(res[w].Value), "call %d", w)
		}
		assert.Equal(t, 1, created, "one waiter committed, the others replayed it")
	})

	t.Run("WaiterWithAnotherRequestIsKeyReuse", func(t *testing.T) {
		key := IdempotencyKey("inprocess", "reuse")
		_, errs := waiters(key, func(context.Context) ([]byte, error) { return []byte("first"), nil }, 1,
			func(w int) []byte { return []byte(fmt.Sprint("request ", w)) })
		require.NoError(t, errs[0])
		assert.ErrorIs(t, errs[1], ErrKeyReuse)
		assert.Equal(t, "first", string(readRecord(t, s, key).Result))
	})
}
