package guard

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestWarmUpSeesBothLayouts writes ids the way an earlier release did (the hour-bucketed
// by-scope index, a bucketed record in 1 min x 1 bucket) and through this release's guard before
// and after its group's switch to the default layout: a warm-up's key source yields every one.
func TestWarmUpSeesBothLayouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	t0 := time.Now().UTC().Truncate(time.Minute)
	clock := testnode.NewClock(t0)
	g, err := New(session, WithKeyspace(ks), WithClock(clock.Now), WithoutClockCheck())
	require.NoError(t, err)
	scope := Scope{Group: "g", Topic: "orders", Partition: 7}

	// An earlier release's writes, before the group has a layout.
	require.NoError(t, session.Query(`INSERT INTO `+ks+`.processed_messages_by_scope (consumer_group, topic, partition, hour, message_id) VALUES (?, ?, ?, ?, ?)`,
		scope.Group, scope.Topic, scope.Partition, t0.Truncate(time.Hour), "old-index").Exec())
	old := lwt.Key{scope.Group, scope.Topic, scope.Partition, t0.Unix(), 0}
	require.NoError(t, g.batch.PutCompletedBatch(ctx, old, []lwt.BatchItem{{Key: "old-batch"}}, [][]byte{nil}, 1))

	handler := func(context.Context, Message) error { return nil }
	process := func(id string) {
		t.Helper()
		out, err := g.Process(ctx, Message{Scope: scope, ID: id}, handler)
		require.NoError(t, err)
		require.Equal(t, Processed, out)
		res, err := g.ProcessBatch(ctx, []Message{{Scope: scope, ID: id + "-batch", Time: clock.Now()}}, handler)
		require.NoError(t, err)
		require.Equal(t, Processed, res[0].Outcome)
	}
	process("before")
	gl, err := g.layoutsOf(ctx, scope.Group, clock.Now(), true)
	require.NoError(t, err)
	require.Len(t, gl.entries, 2)
	require.Equal(t, 1, gl.at(clock.Now().Unix()).buckets, "the earlier layout until the switch")
	clock.Set(time.Unix(gl.entries[1].since, 0).Add(30 * time.Second))
	process("after")
	gl, err = g.layoutsOf(ctx, scope.Group, clock.Now(), true)
	require.NoError(t, err)
	require.Equal(t, DefaultBatchBuckets, gl.at(clock.Now().Unix()).buckets)

	got := map[string]bool{}
	require.NoError(t, g.keySource(scope, time.Hour)(ctx, func(id string, _ time.Time) error {
		got[id] = true
		return nil
	}))
	for _, id := range []string{"old-index", "old-batch", "before", "before-batch", "after", "after-batch"} {
		assert.True(t, got[id], id)
	}
	var ids []string
	require.NoError(t, g.ProcessedIDs(ctx, scope, func(id string) error { ids = append(ids, id); return nil }))
	assert.ElementsMatch(t, []string{"old-index", "before", "after"}, ids)
}

// TestLayoutSpans: a layout's times run from its since to the next one's.
func TestLayoutSpans(t *testing.T) {
	gl := &groupLayouts{entries: []layoutEntry{{since: -1 << 63, layout: layout{60, 1}}, {since: 600, layout: layout{60, 8}}, {since: 1200, layout: layout{30, 16}}}}
	assert.Equal(t, layout{60, 1}, gl.at(599))
	assert.Equal(t, layout{60, 8}, gl.at(600))
	assert.Equal(t, layout{60, 8}, gl.at(1199))
	assert.Equal(t, layout{30, 16}, gl.at(1<<40))
	assert.Equal(t, []layoutSpan{{layout{60, 1}, 500, 600}, {layout{60, 8}, 600, 1200}, {layout{30, 16}, 1200, 1301}}, gl.spans(500, 1300))
	assert.Equal(t, []layoutSpan{{layout{60, 8}, 700, 801}}, gl.spans(700, 800))
	assert.Equal(t, int64(-120), floorTo(-61, 60))
	assert.Equal(t, int64(-60), ceilTo(-61, 60))
	assert.Equal(t, int64(120), ceilTo(61, 60))
	assert.Equal(t, 1, MinBatchBuckets(1, time.Second))
}
