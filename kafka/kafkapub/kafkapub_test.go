package kafkapub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/kafka/header"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestPublishToTheBroker publishes a committed operation's events, and again (a relay's crash
// between publish and mark): the broker holds both copies with the same ids, keys and times.
func TestPublishToTheBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := testnode.KafkaBrokers(t)
	topic := fmt.Sprintf("kafkapub-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(append(ClientOpts(), kgo.SeedBrokers(seeds...))...)
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 2, 1, nil, topic)
	require.NoError(t, err)
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }()

	pub, err := New(cl, topic)
	require.NoError(t, err)
	at := time.Now().Truncate(time.Millisecond)
	msgs := []outbox.Message{
		{ID: outbox.EventID("shop", "o-1", 0), Sequence: 0, Type: "order.placed", Key: "o-1", Payload: []byte("a"), StagedAt: at, Headers: map[string]string{"tenant": "t1"}},
		{ID: outbox.EventID("shop", "o-1", 1), Sequence: 1, Type: "order.paid", Payload: []byte("b"), StagedAt: at},
	}
	require.NoError(t, pub.Publish(ctx, msgs))
	require.NoError(t, pub.Publish(ctx, msgs))

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < 4 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		got = append(got, fs.Records()...)
	}
	seen := map[string]int{}
	for _, r := range got {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		seen[h[header.ID]]++
		assert.True(t, r.Timestamp.Equal(at), "the staging time, on every copy")
		assert.Equal(t, strconv.FormatInt(at.UnixMilli(), 10), h[header.Time], "and in its header")
		switch h[header.ID] {
		case msgs[0].ID:
			assert.Equal(t, "o-1", string(r.Key))
			assert.Equal(t, "order.placed", h[header.Type])
			assert.Equal(t, "t1", h["tenant"])
			assert.Equal(t, "0", h[header.Seq])
		case msgs[1].ID:
			assert.Equal(t, msgs[1].ID, string(r.Key), "no event key: the id partitions")
		}
	}
	assert.Equal(t, map[string]int{msgs[0].ID: 2, msgs[1].ID: 2}, seen)
}

// TestUnsafeClientRefused: a client without idempotent writes (which franz-go also requires
// for any acks but all) is refused.
func TestUnsafeClientRefused(t *testing.T) {
	for _, opts := range [][]kgo.Opt{
		{kgo.DisableIdempotentWrite()},
		{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck())},
	} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
		require.NoError(t, err)
		_, err = New(cl, "t")
		assert.ErrorIs(t, err, ErrUnsafeClient)
		cl.Close()
	}
	_, err := New(nil, "t")
	assert.Error(t, err)
	safe, err := kgo.NewClient(append(ClientOpts(), kgo.SeedBrokers("127.0.0.1:1"))...)
	require.NoError(t, err)
	defer safe.Close()
	_, err = New(safe, "t")
	assert.NoError(t, err)
}

// TestPublishReportsPerRecord: a record over the topic's size limit among good ones is reported
// alone, as rejected for good; the others are acknowledged. A broker that cannot be reached
// fails the call within the relay's deadline, however long franz-go would retry.
func TestPublishReportsPerRecord(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := testnode.KafkaBrokers(t)
	topic := fmt.Sprintf("kafkapub-big-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(append(ClientOpts(), kgo.SeedBrokers(seeds...))...)
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	limit := "2000"
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &limit}, topic)
	require.NoError(t, err)
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }()
	pub, err := New(cl, topic)
	require.NoError(t, err)
	msgs := []outbox.Message{
		{ID: outbox.EventID("shop", "big", 0), Type: "order.placed", Payload: incompressible(10_000)},
	}
	err = pub.Publish(ctx, msgs)
	var per *outbox.PublishErrors
	require.ErrorAs(t, err, &per)
	require.Len(t, per.Errs, 1)
	assert.ErrorIs(t, per.Errs[0], outbox.ErrRejected, "too large: the event's own failure")
	require.NoError(t, pub.Publish(ctx, []outbox.Message{{ID: outbox.EventID("shop", "small", 0), Type: "order.placed", Payload: []byte("ok")}}))

	down, err := kgo.NewClient(append(ClientOpts(), kgo.SeedBrokers("127.0.0.1:1"))...)
	require.NoError(t, err)
	defer down.Close()
	pub, err = New(down, topic)
	require.NoError(t, err)
	start := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	defer dcancel()
	err = pub.Publish(dctx, msgs)
	require.Error(t, err)
	assert.NotErrorIs(t, err, outbox.ErrRejected, "an unreachable broker is no rejection: the relay backs off, parks nothing")
	assert.Less(t, time.Since(start), 5*time.Second, "cut by the delivery timeout or the deadline")
}

// TestClassify: the broker's answers about a record are rejections; timeouts and an unavailable
// broker are not, even when a timeout wraps an error that would be.
func TestClassify(t *testing.T) {
	for _, err := range []error{kerr.MessageTooLarge, kerr.TopicAuthorizationFailed, kerr.InvalidTopicException,
		kerr.PolicyViolation, kerr.InvalidTimestamp, fmt.Errorf("produce: %w", kerr.RecordListTooLarge)} {
		assert.ErrorIs(t, classify(err), outbox.ErrRejected, "%v", err)
	}
	for _, err := range []error{kgo.ErrRecordTimeout, context.DeadlineExceeded, context.Canceled, kgo.ErrRecordRetries,
		kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition, kerr.RequestTimedOut, kerr.NotEnoughReplicas,
		errors.New("dial tcp: connection refused"), fmt.Errorf("%w: %w", kgo.ErrRecordTimeout, kerr.MessageTooLarge)} {
		assert.NotErrorIs(t, classify(err), outbox.ErrRejected, "%v", err)
	}
}

// incompressible returns n bytes that the producer's compression cannot shrink below the limit.
func incompressible(n int) []byte {
	b := make([]byte, n)
	x := uint64(88172645463325252)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}
