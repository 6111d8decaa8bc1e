package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestOutboxCommands: pending lists a committed operation's intent with its verdict, escaped;
// replay refuses without -yes, shows the events with -dry-run, and re-queues them with -yes.
func TestOutboxCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	store, err := lwt.NewStore(session, outbox.Table(ks))
	require.NoError(t, err)
	box, err := outbox.New(session, outbox.WithKeyspace(ks))
	require.NoError(t, err)
	key := "order-1\x1b[31m"
	_, err = store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("shop", key), func(ctx context.Context) ([]byte, error) {
		return []byte("ok"), box.Stage(ctx, outbox.Event{Type: "order.placed", Key: "o1", Payload: []byte("{}")})
	})
	require.NoError(t, err)

	out := ok(t, "outbox", "pending", "-keyspace", ks)
	assert.Contains(t, out, `"order-1\x1b[31m"`, "keys are quoted and escaped")
	assert.NotContains(t, out, "\x1b")
	assert.Contains(t, out, "committed")
	assert.Contains(t, out, "never claimed", "no relay ran yet")

	var pending struct {
		Pending []pendingView `json:"pending"`
		Shards  []cursorView  `json:"shards"`
	}
	okJSON(t, &pending, "outbox", "pending", "-keyspace", ks)
	require.Len(t, pending.Pending, 1)
	assert.Equal(t, key, pending.Pending[0].Key)
	assert.Equal(t, 1, pending.Pending[0].Events)
	assert.Len(t, pending.Shards, outbox.DefaultShards)

	r := cli(t, nil, "outbox", "replay", "shop", key, "-keyspace", ks)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "-yes")

	out = ok(t, "outbox", "replay", "shop", key, "-keyspace", ks, "-dry-run")
	assert.Contains(t, out, "dry run")
	assert.Contains(t, out, outbox.EventID("shop", key, 0))

	var res map[string]any
	okJSON(t, &res, "outbox", "replay", "shop", key, "-keyspace", ks, "-yes")
	assert.Equal(t, false, res["dry_run"])
	// Whether the replay wrote a new intent depends on the minute it ran in (an intent of the
	// current minute's bucket is re-opened, not written again); either way the operation is
	// pending for the relay afterwards.
	var after struct {
		Pending []struct {
			Key string `json:"key"`
		} `json:"pending"`
	}
	okJSON(t, &after, "outbox", "pending", "-keyspace", ks)
	var keys []string
	for _, p := range after.Pending {
		keys = append(keys, p.Key)
	}
	assert.Contains(t, keys, key)

	r = cli(t, nil, "outbox", "replay", "shop", "missing", "-keyspace", ks, "-yes")
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "no committed events")
	r = cli(t, nil, "outbox", "pending", "-keyspace", ks, "-shards", "-1")
	assert.Equal(t, exitUsage, r.code)
	// The stager stored its layout (16 shards): a listing of 8 shards would read half of them.
	r = cli(t, nil, "outbox", "pending", "-keyspace", ks, "-shards", "8")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "layout differs")
	assert.Contains(t, ok(t, "outbox", "pending", "-keyspace", ks), "layout: 16 shards, buckets of 1m0s, horizon 1m0s, key order off")
}

// TestOutboxParkedCommands: a parked event is listed (exit 1: an incident), unparked or
// discarded only once confirmed, and gone from the listing afterwards.
func TestOutboxParkedCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	store, err := lwt.NewStore(session, outbox.Table(ks))
	require.NoError(t, err)
	box, err := outbox.New(session, outbox.WithKeyspace(ks))
	require.NoError(t, err)
	for _, k := range []string{"p-1", "p-2"} {
		_, err = store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("shop", k), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, outbox.Event{Type: "order.placed", Key: k})
		})
		require.NoError(t, err)
	}
	r, err := outbox.NewRelay(session, outbox.PublisherFunc(func(context.Context, []outbox.Message) error {
		return fmt.Errorf("%w: record too large", outbox.ErrRejected)
	}), outbox.WithKeyspace(ks), outbox.WithMaxAttempts(1))
	require.NoError(t, err)
	defer r.Release(context.Background())
	require.Eventually(t, func() bool {
		st, _ := r.Poll(context.Background())
		return st.Parked == 2
	}, 30*time.Second, 100*time.Millisecond)

	res := cli(t, nil, "outbox", "parked", "-keyspace", ks)
	assert.Equal(t, exitFailure, res.code, "parked events fail the check")
	assert.Contains(t, res.stdout, `"p-1"`)
	assert.Contains(t, res.stdout, "poison")
	assert.Contains(t, res.stderr, "2 operations have parked events")

	res = cli(t, nil, "outbox", "discard", "shop", "p-1", "-keyspace", ks)
	assert.Equal(t, exitUsage, res.code, "not confirmed")
	assert.Contains(t, ok(t, "outbox", "discard", "shop", "p-1", "-keyspace", ks, "-dry-run"), "would discard")
	assert.Contains(t, ok(t, "outbox", "unpark", "shop", "p-2", "-keyspace", ks, "-dry-run"), outbox.EventID("shop", "p-2", 0))
	assert.Contains(t, ok(t, "outbox", "discard", "shop", "p-1", "-keyspace", ks, "-yes"), "discarded")
	assert.Contains(t, ok(t, "outbox", "unpark", "shop", "p-2", "-keyspace", ks, "-yes"), "unparked")
	assert.Contains(t, ok(t, "outbox", "parked", "-keyspace", ks), "no parked events")
	res = cli(t, nil, "outbox", "unpark", "shop", "p-2", "-keyspace", ks, "-yes")
	assert.Equal(t, exitFailure, res.code)
	var pending struct {
		Pending []pendingView `json:"pending"`
	}
	okJSON(t, &pending, "outbox", "pending", "-keyspace", ks)
	var keys []string
	for _, p := range pending.Pending {
		keys = append(keys, p.Key)
	}
	assert.Contains(t, keys, "p-2", "the unparked operation waits for the relay")
}
