package loop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryTicksUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := Every(time.Millisecond, func() bool { n.Add(1); return true })
	assert.Eventually(t, func() bool { return n.Load() >= 3 }, 5*time.Second, time.Millisecond)
	stop()
	after := n.Load()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, after, n.Load(), "no tick after stop returned")
	stop() // a second stop is harmless
}

func TestEveryEndsWhenTickSaysSo(t *testing.T) {
	var n atomic.Int32
	stop := Every(time.Millisecond, func() bool { return n.Add(1) < 2 })
	assert.Eventually(t, func() bool { return n.Load() == 2 }, 5*time.Second, time.Millisecond)
	stop() // returns at once: the goroutine has ended
	time.Sleep(10 * time.Millisecond)
	assert.EqualValues(t, 2, n.Load())
}

func TestSleepWaitsOrEndsWithItsContext(t *testing.T) {
	assert.NoError(t, Sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
	assert.Less(t, time.Since(start), time.Minute, "a cancelled context ends the wait at once")
}
