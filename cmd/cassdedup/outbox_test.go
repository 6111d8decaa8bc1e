package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/testnode"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/outbox"
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
	r = cli(t, nil, "outbox", "pending", "-keyspace", ks, "-shards", "0")
	assert.Equal(t, exitUsage, r.code)
}
