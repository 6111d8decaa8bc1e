package kafkasub_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/syncbuf"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestGuardClockRefusalHoldsRecords: a consumer whose guard cannot measure its offset from the
// cluster's clock (its session is gone, say) has every partition's Own and poll refused with
// guard.ErrClockOffset: nothing runs, nothing is committed, and it says so at Error, once (not
// at every poll). A consumer with a working guard then takes every record, each applied once.
func TestGuardClockRefusalHoldsRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 20)
	closed := testnode.Connect(t, testnode.Cluster(t))
	closed.Close()
	blind, err := guard.New(closed, guard.WithKeyspace(f.ks))
	require.NoError(t, err)
	var logs syncbuf.Buffer
	stop := run(t, f.consumer(blind, f.handler(0, nil),
		kafkasub.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))))
	f.waitFor("the refusal logged", func() bool { return strings.Contains(logs.String(), "clock's offset") })
	time.Sleep(2 * time.Second) // polls go on being refused
	stop()
	assert.Zero(t, f.count(), "nothing ran")
	assert.False(t, f.committedAll(), "nothing committed")
	assert.Equal(t, 1, strings.Count(logs.String(), "clock's offset"), "said once at Error:\n%s", logs.String())
	assert.Positive(t, blind.Clock().Refusals)

	stop = run(t, f.consumer(f.guard(), f.handler(0, nil)))
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	f.exactlyOnce()
}
