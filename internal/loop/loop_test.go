package loop

import (
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
