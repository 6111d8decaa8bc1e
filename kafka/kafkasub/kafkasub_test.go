package kafkasub_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/kafka/kafkapub"
	"github.com/cassdedup/cassdedup/kafka/kafkasub"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// fixture is a topic of the real broker with n published events, a guard on a fresh keyspace,
// and the effects the consumers' handlers applied.
type fixture struct {
	t       *testing.T
	seeds   []string
	topic   string
	group   string
	session *gocql.Session
	ks      string
	ids     []string
	msgs    []outbox.Message // published, in the order of ids
	adm     *kadm.Client

	mu      sync.Mutex
	applied map[string]int // successful handler runs per event id
}

func newFixture(t *testing.T, partitions int32, n int) *fixture {
	return newFixtureWith(t, partitions, n, nil)
}

// newFixtureWith is newFixture on a topic created with configs.
func newFixtureWith(t *testing.T, partitions int32, n int, configs map[string]*string) *fixture {
	session, ks := testnode.NewSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fixture{t: t, seeds: testnode.KafkaBrokers(t), session: session, ks: ks, applied: map[string]int{},
		topic: fmt.Sprintf("kafkasub-%s-%d", t.Name(), time.Now().UnixNano()), group: "billing-" + ks}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.seeds...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	f.adm = kadm.NewClient(cl)
	_, err = f.adm.CreateTopic(ctx, partitions, 1, configs, f.topic)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = f.adm.DeleteTopics(context.Background(), f.topic) })
	pub, err := kafkapub.New(cl, f.topic)
	require.NoError(t, err)
	msgs := make([]outbox.Message, n)
	for i := range msgs {
		id := outbox.EventID("shop", fmt.Sprint("order-", i), 0)
		f.ids = append(f.ids, id)
		msgs[i] = outbox.Message{ID: id, Type: "order.placed", Payload: []byte(fmt.Sprint(i)), StagedAt: time.Now()}
	}
	require.NoError(t, pub.Publish(ctx, msgs))
	f.msgs = msgs
	return f
}

// guard is a guard of one consumer process, with a short ownership lease so a fenced owner's
// successor waits seconds, not ten.
func (f *fixture) guard() *guard.Guard {
	g, err := guard.New(f.session, guard.WithKeyspace(f.ks), guard.WithLease(5*time.Second),
		guard.WithOwnership(3*time.Second, 1500*time.Millisecond))
	require.NoError(f.t, err)
	return g
}

// handler applies an event's effect once per successful run, after fail says it should not
// fail, and takes delay.
func (f *fixture) handler(delay time.Duration, fail func(id string) bool) guard.Handler {
	return func(ctx context.Context, m guard.Message) error {
		time.Sleep(delay)
		if fail != nil && fail(m.ID) {
			return errors.New("the payment provider is down")
		}
		if err := ctx.Err(); err != nil {
			return err // a lost lease or ownership: no effect
		}
		f.mu.Lock()
		f.applied[m.ID]++
		f.mu.Unlock()
		return nil
	}
}

func (f *fixture) consumer(g *guard.Guard, h guard.Handler, opts ...kafkasub.Option) *kafkasub.Consumer {
	c, err := kafkasub.New(g, h, f.options(opts)...)
	require.NoError(f.t, err)
	return c
}

// options are the tests' consumer options, then opts.
func (f *fixture) options(opts []kafkasub.Option) []kafkasub.Option {
	return append([]kafkasub.Option{
		kafkasub.WithClient(kgo.SeedBrokers(f.seeds...), kgo.ConsumerGroup(f.group), kgo.ConsumeTopics(f.topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond)),
		kafkasub.WithMaxPollRecords(20), kafkasub.WithRetryBackoff(20 * time.Millisecond),
		kafkasub.WithFastPath(func(s guard.Scope) (lwt.PreCheck, error) {
			return bloom.NewPreCheck(fmt.Sprintf("%s/%s/%d", s.Group, s.Topic, s.Partition), bloom.WithExpectedItems(10_000))
		})}, opts...)
}

// run runs c until stop is called, which waits for Run to return.
func run(t *testing.T, c *kafkasub.Consumer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		assert.NoError(t, <-done)
	}
}

// count is how many events have been applied at least once.
func (f *fixture) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applied)
}

// waitFor waits until cond holds, for at most two minutes.
func (f *fixture) waitFor(what string, cond func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// committedAll reports whether the group's committed offsets reached the end of every partition.
func (f *fixture) committedAll() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := f.adm.ListEndOffsets(ctx, f.topic)
	if err != nil {
		return false
	}
	got, err := f.adm.FetchOffsets(ctx, f.group)
	if err != nil {
		return false
	}
	all := true
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := got.Lookup(e.Topic, e.Partition)
		all = all && ok && c.At == e.Offset
	})
	return all
}

// exactlyOnce asserts that every event was applied once: none lost, none twice.
func (f *fixture) exactlyOnce() {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost, twice := 0, 0
	for _, id := range f.ids {
		switch n := f.applied[id]; {
		case n == 0:
			lost++
		case n > 1:
			twice++
		}
	}
	f.t.Logf("%d events: %d lost, %d applied twice", len(f.ids), lost, twice)
	assert.Zero(f.t, lost, "lost")
	assert.Zero(f.t, twice, "applied twice")
}

// TestFailedRecordIsRedelivered: a record whose handler fails is sought back to and delivered
// again until it succeeds; the offsets never pass it before, and every event applies once. A
// record without an event id goes to the poison hook once, and the offsets move past it.
func TestFailedRecordIsRedelivered(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	f := newFixture(t, 2, 60)
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.seeds...))
	require.NoError(t, err)
	require.NoError(t, cl.ProduceSync(context.Background(), &kgo.Record{Topic: f.topic, Value: []byte("no id")}).FirstErr())
	cl.Close()
	var poisoned []error
	poison := kafkasub.WithPoison(func(_ context.Context, _ *kgo.Record, err error) error {
		mu.Lock()
		defer mu.Unlock()
		poisoned = append(poisoned, err)
		return nil
	})
	var failures atomic.Int64
	failing := map[string]int{f.ids[3]: 2, f.ids[40]: 1}
	fail := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		if failing[id] > 0 {
			failing[id]--
			failures.Add(1)
			return true
		}
		return false
	}
	stop := run(t, f.consumer(f.guard(), f.handler(0, fail), poison))
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	require.Equal(t, int64(3), failures.Load(), "each failing record was delivered again")
	mu.Lock()
	require.Len(t, poisoned, 1, "the record without an id was handed to the poison hook once")
	require.ErrorIs(t, poisoned[0], kafkasub.ErrNoID)
	mu.Unlock()
	f.exactlyOnce()
}

// TestNewPollAppliesAPollAtOnce: with NewPoll, each partition's claimed records of a poll reach
// one call of apply; a record whose error apply reports is sought back to and delivered again,
// and every event applies once, its offsets committed.
func TestNewPollAppliesAPollAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 60)
	var calls, most, failures atomic.Int64
	failing := map[string]bool{f.ids[7]: true, f.ids[51]: true}
	var mu sync.Mutex
	h := f.handler(0, func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		if failing[id] {
			delete(failing, id)
			failures.Add(1)
			return true
		}
		return false
	})
	apply := func(ctx context.Context, msgs []guard.Message) []error {
		calls.Add(1)
		for n := int64(len(msgs)); ; {
			if m := most.Load(); n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = h(ctx, m)
		}
		return errs
	}
	c, err := kafkasub.NewPoll(f.guard(), apply, f.options(nil)...)
	require.NoError(t, err)
	stop := run(t, c)
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stop()
	require.Equal(t, int64(2), failures.Load(), "each failing record was delivered again")
	require.Greater(t, most.Load(), int64(1), "apply was given a poll's records at once")
	require.Less(t, calls.Load(), int64(len(f.ids)), "fewer calls than records")
	f.exactlyOnce()
}

// TestRebalanceWhileRecordsInFlight: a second consumer joins while the first has records in
// flight, then the first leaves: partitions move twice mid-stream (Disown on revocation, Own at
// the new generation on assignment, the fast path on throughout), and every event applies once.
func TestRebalanceWhileRecordsInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, 400)
	h := f.handler(3*time.Millisecond, nil)
	ga, gb := f.guard(), f.guard()
	stopA := run(t, f.consumer(ga, h))
	f.waitFor("the first consumer to start", func() bool { return f.count() > 40 })
	stopB := run(t, f.consumer(gb, h))
	f.waitFor("more records", func() bool { return f.count() > 200 })
	stopA()
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stopB()
	t.Logf("fast path: a=%d b=%d of %d", ga.Stats().FastPath+ga.BatchStats().FastPath, gb.Stats().FastPath+gb.BatchStats().FastPath, len(f.ids))
	f.exactlyOnce()
}

// TestConsumerKilledBeforeItsCommit: a consumer stops dead after its handlers ran and before it
// committed (no commit, no Disown, no lease released); the one that takes its partitions is
// delivered those records again, waits out the dead owner's lease, and finds them processed.
func TestConsumerKilledBeforeItsCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, 120)
	h := f.handler(time.Millisecond, nil)
	ga := f.guard()
	a := f.consumer(ga, h)
	a.CrashBeforeCommit(func() bool { return f.count() >= 30 })
	require.NoError(t, a.Run(context.Background()), "a stops dead at its crash")
	applied := f.count()
	require.False(t, f.committedAll())
	stopB := run(t, f.consumer(f.guard(), h))
	f.waitFor("every event and its commit", func() bool { return f.count() == len(f.ids) && f.committedAll() })
	stopB()
	t.Logf("the dead consumer applied %d events without committing them", applied)
	f.exactlyOnce()
}

// TestBadOptionsAreRefused: each bad option names itself.
func TestBadOptionsAreRefused(t *testing.T) {
	g := &guard.Guard{}
	h := func(context.Context, guard.Message) error { return nil }
	for _, tc := range []struct {
		name string
		opts []kafkasub.Option
	}{
		{"WithClient is required", nil},
		{"WithMaxPollRecords(0)", []kafkasub.Option{kafkasub.WithClient(kgo.SeedBrokers("x:1")), kafkasub.WithMaxPollRecords(0)}},
		{"WithFastPath(nil)", []kafkasub.Option{kafkasub.WithClient(kgo.SeedBrokers("x:1")), kafkasub.WithFastPath(nil)}},
		{"kgo.ConsumerGroup", []kafkasub.Option{kafkasub.WithClient(kgo.SeedBrokers("x:1"))}},
	} {
		_, err := kafkasub.New(g, h, tc.opts...)
		require.ErrorIs(t, err, kafkasub.ErrInvalidOption, tc.name)
		require.ErrorContains(t, err, tc.name)
	}
	_, err := kafkasub.New(nil, h)
	require.ErrorIs(t, err, kafkasub.ErrInvalidOption)
	_, err = kafkasub.NewPoll(g, nil)
	require.ErrorIs(t, err, kafkasub.ErrInvalidOption)
}
