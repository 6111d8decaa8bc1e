package guard_test

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

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// bucketedStore is a second writer of processed_messages_bucketed, as another consumer's guard
// would be, that can leave claims unfinished: a consumer that crashed mid-batch.
func bucketedStore(t *testing.T, session *gocql.Session, ks string, lease time.Duration) *lwt.BatchStore {
	t.Helper()
	s, err := lwt.NewBatchStore(session, lwt.BatchTable{Keyspace: ks, Name: "processed_messages_bucketed",
		PartitionColumns: []string{"consumer_group", "topic", "partition", "window_start", "bucket"}, KeyColumn: "message_id"},
		lwt.WithLease(lease), lwt.WithRetention(guard.DefaultRetention))
	require.NoError(t, err)
	return s
}

// partitionOf is the documented layout of processed_messages_bucketed with the default window
// (1 min) and one bucket.
func partitionOf(m guard.Message) lwt.Key {
	return lwt.Key{m.Group, m.Topic, m.Partition, m.Time.Unix() / 60 * 60, 0}
}

// runCounter counts handler runs per message id and can make chosen ids fail.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
	fail map[string]bool
}

func newRunCounter() *runCounter { return &runCounter{runs: map[string]int{}, fail: map[string]bool{}} }

func (r *runCounter) handle(_ context.Context, m guard.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[m.ID]++
	if r.fail[m.ID] {
		return fmt.Errorf("%s failed", m.ID)
	}
	return nil
}

func (r *runCounter) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

// TestProcessBatchSettlesMixedBatch: one poll mixes new messages, a processed one, one held by
// a live claim, a released one, one whose claimer crashed and whose lease Cassandra expired, a
// poison one, an id reused with another payload, a producer duplicate inside the poll and a
// message without a time. Each gets the outcome Process would give it, and only the new,
// released and expired ones run.
func TestProcessBatchSettlesMixedBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithMaxAttempts(2))
	require.NoError(t, err)
	at := time.Now()
	msg := func(id, body string) guard.Message {
		return guard.Message{Scope: guard.Scope{Group: "g", Topic: "orders", Partition: 3}, ID: id, Payload: []byte(body), Time: at}
	}
	rc := newRunCounter()
	rc.fail["released"], rc.fail["poison"] = true, true

	// Earlier polls: processed, released (failed once), poison (failed twice), reuse's first body.
	for _, poll := range [][]guard.Message{{msg("dup", "a"), msg("released", "a"), msg("poison", "a"), msg("reuse", "a")}, {msg("poison", "a")}} {
		_, err := g.ProcessBatch(ctx, poll, rc.handle)
		require.NoError(t, err)
	}
	delete(rc.fail, "released")
	require.Equal(t, 1, rc.count("released"))
	require.Equal(t, 2, rc.count("poison"))
	// Another consumer holds "busy" under a live lease; a crashed one held "expired" under a
	// one-second lease that the node lets lapse.
	for id, lease := range map[string]time.Duration{"busy": time.Minute, "expired": time.Second} {
		begun, err := bucketedStore(t, session, ks, lease).BeginBatch(ctx, partitionOf(msg(id, "")), []lwt.BatchItem{{Key: id, Fingerprint: lwt.Fingerprint([]byte("a"))}})
		require.NoError(t, err)
		require.NotNil(t, begun[0].Claim)
	}
	require.Eventually(t, func() bool {
		var lease gocql.UUID
		err := session.Query(`SELECT lease_owner FROM processed_messages_bucketed WHERE consumer_group = 'g' AND topic = 'orders' AND partition = 3 AND window_start = ? AND bucket = 0 AND message_id = 'expired'`,
			partitionOf(msg("", ""))[3]).Scan(&lease)
		return err == nil && lease == gocql.UUID{}
	}, 10*time.Second, 100*time.Millisecond, "the node expires the lease cell")

	noTime := msg("no-time", "a")
	noTime.Time = time.Time{}
	poll := []guard.Message{msg("new-1", "a"), msg("dup", "a"), msg("busy", "a"), msg("released", "a"), msg("new-2", "a"),
		msg("expired", "a"), msg("poison", "a"), msg("reuse", "b"), msg("new-2", "a"), noTime, msg("new-3", "a")}
	res, err := g.ProcessBatch(ctx, poll, rc.handle)
	require.NoError(t, err)
	want := []guard.Outcome{guard.Processed, guard.Duplicate, guard.InProgress, guard.Processed, guard.Processed,
		guard.Processed, guard.Poison, guard.Failed, guard.Duplicate, guard.Failed, guard.Processed}
	for i, r := range res {
		assert.Equal(t, want[i], r.Outcome, "%s: %v", poll[i].ID, r.Err)
	}
	assert.ErrorIs(t, res[2].Err, lwt.ErrInProgress)
	assert.ErrorIs(t, res[6].Err, guard.ErrPoison)
	assert.ErrorIs(t, res[7].Err, guard.ErrMessageReuse)
	assert.ErrorIs(t, res[9].Err, guard.ErrInvalidMessage)
	for id, runs := range map[string]int{"new-1": 1, "new-2": 1, "new-3": 1, "dup": 1, "busy": 0, "released": 2, "expired": 1, "poison": 2, "reuse": 1, "no-time": 0} {
		assert.Equal(t, runs, rc.count(id), id)
	}
	st := g.BatchStats()
	assert.EqualValues(t, 1, st.Takeovers, "the expired claim was taken over")
	assert.Positive(t, st.LWTRejected, "the first claim batch was rejected and settled")
}

// TestProcessBatchRacingConsumersRunEachMessageOnce: two consumers (guards with their own
// sessions) receive the same polls at the same time, many polls at once, as during a
// rebalance; a tenth of the handlers fail on their first run. Each consumer redelivers what it
// could not acknowledge until everything is acknowledged, and every message takes effect once.
func TestProcessBatchRacingConsumersRunEachMessageOnce(t *testing.T) {
	t.Parallel()
	const messages, pollSize, partitions = 2000, 100, 4
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	other := testnode.Cluster(t)
	other.Keyspace = ks
	session2, err := other.CreateSession()
	require.NoError(t, err)
	t.Cleanup(session2.Close)
	var guards []*guard.Guard
	for _, s := range []*gocql.Session{session, session2} {
		g, err := guard.New(s, guard.WithKeyspace(ks))
		require.NoError(t, err)
		guards = append(guards, g)
	}
	at := time.Now()
	var (
		mu      sync.Mutex
		applied = map[string]int{}
		failed  = map[string]bool{}
		runs    atomic.Int64
	)
	handler := func(_ context.Context, m guard.Message) error {
		runs.Add(1)
		mu.Lock()
		defer mu.Unlock()
		var i int
		fmt.Sscanf(m.ID, "m-%d", &i)
		if i%10 == 7 && !failed[m.ID] {
			failed[m.ID] = true
			return errors.New("transient")
		}
		applied[m.ID]++
		return nil
	}
	var polls [][]guard.Message
	for p := range partitions {
		for start := 0; start < messages/partitions; start += pollSize {
			var poll []guard.Message
			for i := start; i < start+pollSize; i++ {
				id := fmt.Sprintf("m-%d", p*messages/partitions+i)
				poll = append(poll, guard.Message{Scope: guard.Scope{Group: "g", Topic: "t", Partition: int32(p)}, ID: id, Payload: []byte(id), Time: at})
			}
			polls = append(polls, poll)
		}
	}
	consume := func(g *guard.Guard, poll []guard.Message) error {
		for tries := 0; len(poll) > 0; tries++ {
			if tries == 200 {
				return fmt.Errorf("%d messages never acknowledged", len(poll))
			}
			res, err := g.ProcessBatch(ctx, poll, handler)
			if err != nil {
				return err
			}
			var again []guard.Message
			for i, r := range res {
				switch r.Outcome {
				case guard.Processed, guard.Duplicate:
				case guard.InProgress, guard.Failed:
					again = append(again, poll[i])
				default:
					return fmt.Errorf("%s: %v: %w", poll[i].ID, r.Outcome, r.Err)
				}
			}
			poll = again
			if len(poll) > 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		return nil
	}
	errs := make(chan error, 2*len(polls))
	var wg sync.WaitGroup
	for _, g := range guards {
		for _, poll := range polls {
			wg.Go(func() { errs <- consume(g, poll) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, applied, messages)
	for id, n := range applied {
		require.Equal(t, 1, n, "%s took effect once", id)
	}
	t.Logf("%d handler runs for %d messages (%d failed once); %+v / %+v", runs.Load(), messages, len(failed), guards[0].BatchStats(), guards[1].BatchStats())
}

// TestProcessBatchBucketsKeepDuplicatesTogether: with several buckets per window and a wider
// window, a poll spreads over several Cassandra partitions, and a later poll of the same
// messages (a redelivery) finds every one of them in the partition its first delivery used.
func TestProcessBatchBucketsKeepDuplicatesTogether(t *testing.T) {
	t.Parallel()
	const n, buckets, window = 40, 4, 2 * time.Minute
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	// A group whose earlier release had this layout keeps it from its first message on; 4
	// buckets of 2 min windows hold 3,000 messages/s per broker partition.
	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithBatchBuckets(buckets), guard.WithBatchWindow(window),
		guard.WithLegacyBatchLayout(window, buckets), guard.WithPartitionRate(3_000))
	require.NoError(t, err)
	at := time.Now()
	var poll []guard.Message
	for i := range n {
		id := fmt.Sprintf("b-%d", i)
		poll = append(poll, guard.Message{Scope: guard.Scope{Group: "g", Topic: "buckets"}, ID: id, Payload: []byte(id), Time: at})
	}
	rc := newRunCounter()
	res, err := g.ProcessBatch(ctx, poll, rc.handle)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, guard.Processed, r.Outcome, "%s: %v", poll[i].ID, r.Err)
	}
	res, err = g.ProcessBatch(ctx, poll, rc.handle)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, guard.Duplicate, r.Outcome, "%s: %v", poll[i].ID, r.Err)
		require.Equal(t, 1, rc.count(poll[i].ID))
	}
	iter := session.Query(`SELECT DISTINCT consumer_group, topic, partition, window_start, bucket FROM processed_messages_bucketed`).Iter()
	var group, topic string
	var partition int32
	var start int64
	var bucket int
	seen := map[int]bool{}
	for iter.Scan(&group, &topic, &partition, &start, &bucket) {
		seen[bucket] = true
		assert.Zero(t, start%int64(window/time.Second), "window_start %d is on a %v boundary", start, window)
	}
	require.NoError(t, iter.Close())
	assert.Greater(t, len(seen), 1, "%d messages over %d buckets used only %v", n, buckets, seen)
	for b := range seen {
		assert.True(t, b >= 0 && b < buckets, "bucket %d", b)
	}
}
