package kafkasub_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/syncbuf"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestStaticMemberRestartedResumes: a consumer with static membership (kgo.InstanceID) is killed
// (no commit, no Disown, its client closed without leaving the group) and a new process with the
// same InstanceID and a guard of its own joins within the session timeout: the group gives it
// the partitions back at the same generation, without a rebalance, and it takes them over once
// the dead process's leases expire, within a lease, the write timeout Own waits out and a poll.
// Before, Own at the same generation was refused on every poll (lwt.ErrSuperseded) and the
// partitions never resumed.
func TestStaticMemberRestartedResumes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 120)
	h := f.handler(time.Millisecond, nil)
	static := kafkasub.WithClient(kgo.InstanceID("pod-0"))
	// The killed process's guard has a session of its own, closed at the crash: its lease
	// renewals stop with it, as a dead process's do.
	cluster := testnode.Cluster(t)
	cluster.Keyspace = f.ks
	sessionA := testnode.Connect(t, cluster)
	ga, err := guard.New(sessionA, guard.WithKeyspace(f.ks), guard.WithLease(5*time.Second),
		guard.WithOwnership(3*time.Second, 1500*time.Millisecond))
	require.NoError(t, err)
	a := f.consumer(ga, h, static)
	var genA int32
	a.CrashBeforeCommit(func() bool {
		_, genA = a.Client().GroupMetadata()
		if f.count() < 30 {
			return false
		}
		sessionA.Close()
		return true
	})
	require.NoError(t, a.Run(context.Background()), "a stops dead at its crash")
	applied := f.count()
	t.Logf("a crashed at generation %d after %d", genA, applied)

	start := time.Now()
	b := f.consumer(f.guard(), h, static, kafkasub.WithLogger(slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	stopB := run(t, b)
	f.waitFor("the restarted member to process a new record", func() bool { return f.count() > applied })
	resumed := time.Since(start)
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	_, genB := b.Client().GroupMetadata()
	stopB()
	t.Logf("generation %d then %d; the restarted member resumed after %v (lease 3s)", genA, genB, resumed)
	require.Equal(t, genA, genB, "a static member's restart keeps the generation: the case under test")
	require.Less(t, resumed, 3*time.Second+time.Second+lwt.DefaultWriteRequestTimeout+5*time.Second,
		"within a lease (and its TTL second), the wait for the dead process's writes, a join and a poll")
	f.exactlyOnce()
}

// TestGenerationWentBackIsLoggedAndRepaired: the owners table holds a partition at generation
// 1000 (the group was deleted and made again, say) and nothing holds its lease; the new group's
// consumer, at a small generation, processes nothing of it and says why at Error, naming the
// repair; once the group's owners are forgotten, it processes every record once. Before, the
// refusal was the zombie's ErrSuperseded, logged at Warn with nothing to do.
func TestGenerationWentBackIsLoggedAndRepaired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 40)
	ctx := context.Background()
	old := f.guard()
	scope := guard.Scope{Group: f.group, Topic: f.topic, Partition: 0}
	pre, err := bloom.NewPreCheck("old", bloom.WithExpectedItems(1000))
	require.NoError(t, err)
	require.NoError(t, old.Own(ctx, scope, 1000, pre))
	old.Disown(scope)

	var logs syncbuf.Buffer
	g := f.guard()
	stop := run(t, f.consumer(g, f.handler(time.Millisecond, nil),
		kafkasub.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))))
	f.waitFor("the refusal logged at Error", func() bool {
		return strings.Contains(logs.String(), `"level":"ERROR"`) && strings.Contains(logs.String(), "cassdedup owners forget")
	})
	f.waitFor("more refusals", func() bool { return g.Stats().EpochRegressed >= 3 })
	require.Zero(t, f.count(), "nothing of the partition ran")
	errors := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "owners forget") {
			errors++
		}
	}
	require.Equal(t, 1, errors, "said at Error once per assignment, not at every poll")

	forgotten, err := g.ForgetOwners(ctx, f.group, false)
	require.NoError(t, err)
	require.Len(t, forgotten, 1)
	require.True(t, forgotten[0].Forgotten)
	require.Equal(t, int64(1000), forgotten[0].Epoch)
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	require.Positive(t, g.Stats().FastPath+g.BatchStats().FastPath, "the partition is owned again")
	f.exactlyOnce()
}

// tWriter logs the consumer's records through t, so a failure shows them.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
