package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/faultproxy"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestMessageCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	g, err := guard.New(session, guard.WithKeyspace(ks))
	require.NoError(t, err)
	scope := guard.Scope{Group: "billing", Topic: "invoices", Partition: 2}
	for i := range 5 {
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: fmt.Sprint("inv-", i)}, func(context.Context, guard.Message) error { return nil })
		require.NoError(t, err)
	}
	for range 3 {
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: "inv-flaky"}, func(context.Context, guard.Message) error { return errors.New("smtp down") })
		require.Error(t, err)
	}
	args := func(a ...string) []string { return append(a, "-keyspace", ks) }

	var v recordView
	okJSON(t, &v, args("message", "get", "billing", "invoices", "2", "inv-flaky")...)
	assert.Equal(t, "RELEASED", v.Status)
	assert.Equal(t, 3, v.Attempts)
	assert.Equal(t, `"smtp down"`, v.ResultPreview)
	assert.Equal(t, []any{"billing", "invoices", float64(2), "inv-flaky"}, v.Key)

	var list struct {
		Messages []messageView `json:"messages"`
	}
	okJSON(t, &list, args("messages", "list", "billing", "invoices", "2")...)
	statuses := map[string]string{}
	for _, m := range list.Messages {
		statuses[m.ID] = m.Status
	}
	assert.Len(t, statuses, 6)
	assert.Equal(t, "COMPLETED", statuses["inv-3"])
	assert.Equal(t, "RELEASED", statuses["inv-flaky"])
	assert.Contains(t, ok(t, args("messages", "list", "billing", "invoices", "2", "-limit", "2")...), "(stopped at -limit 2)")

	var stuck struct {
		Stuck []stuckView `json:"stuck"`
	}
	okJSON(t, &stuck, args("messages", "stuck")...)
	require.Len(t, stuck.Stuck, 1)
	assert.Equal(t, "billing invoices 2 inv-flaky", keyText(stuck.Stuck[0].Key))

	r := cli(t, nil, args("message", "release", "billing", "invoices", "2", "inv-3")...)
	assert.Equal(t, exitUsage, r.code, "a COMPLETED message needs -yes: %s", r.stderr)
	assert.Contains(t, ok(t, args("message", "release", "billing", "invoices", "2", "inv-3", "-dry-run")...), "dry run: nothing written")
	okJSON(t, &v, args("message", "get", "billing", "invoices", "2", "inv-3")...)
	assert.Equal(t, "COMPLETED", v.Status, "the dry run wrote nothing")
	assert.Contains(t, ok(t, args("message", "release", "billing", "invoices", "2", "inv-3", "-yes")...), "RELEASED: the next attempt claims it again with fence 2")
	ran := false
	_, err = g.Process(ctx, guard.Message{Scope: scope, ID: "inv-3"}, func(context.Context, guard.Message) error { ran = true; return nil })
	require.NoError(t, err)
	assert.True(t, ran, "the released message ran again on its next delivery")
	assert.Contains(t, ok(t, args("message", "purge", "billing", "invoices", "2", "inv-flaky")...), "purged  billing invoices 2 inv-flaky")
	r = cli(t, nil, args("message", "get", "billing", "invoices", "2", "inv-flaky")...)
	assert.Equal(t, exitFailure, r.code)
}

// TestCounterCommands leaves two increments unconfirmed through a proxy that loses the counter
// update (the node never sees it) or its response (the node applied it), then lists and
// repairs them with the evidence each needs.
func TestCounterCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	proxy := faultproxy.New(t, hosts[0])
	cluster := testnode.Cluster(t)
	cluster.Hosts, cluster.DisableInitialHostLookup, cluster.Timeout = []string{proxy.Addr()}, true, time.Second
	proxied, err := cluster.CreateSession()
	require.NoError(t, err)
	t.Cleanup(proxied.Close)
	store, err := counters.New(proxied, counters.WithKeyspace(ks))
	require.NoError(t, err)

	// An increment's statements carrying the counter's name: index row, claim, counter update.
	proxy.ArmAfter("lost-update", faultproxy.DropRequest, 2, 1, nil)
	_, err = store.Increment(ctx, counters.Op{Counter: "lost-update", ID: "op-1", Delta: 10})
	require.ErrorIs(t, err, counters.ErrUnconfirmed)
	proxy.ArmAfter("lost-response", faultproxy.DropResponse, 2, 1, nil)
	_, err = store.Increment(ctx, counters.Op{Counter: "lost-response", ID: "op-2", Delta: 100})
	require.ErrorIs(t, err, counters.ErrUnconfirmed)

	args := func(a ...string) []string { return append(a, "-keyspace", ks) }
	var list struct {
		Unapplied []claimView `json:"unapplied"`
	}
	okJSON(t, &list, args("counters", "unapplied", "-settle", "0s")...)
	got := map[string]int64{}
	for _, c := range list.Unapplied {
		got[c.Counter+"/"+c.OpID] = c.Delta
	}
	assert.Equal(t, map[string]int64{"lost-update/op-1": 10, "lost-response/op-2": 100}, got)

	dry := ok(t, args("counters", "repair", "lost-update", "op-1", "-outcome", "missing", "-dry-run")...)
	assert.Contains(t, dry, "will settle lost-update op-1: claimed at ")
	assert.Contains(t, dry, "then: increment the counter by 10, then mark it applied")
	assert.Contains(t, dry, "dry run: nothing written")
	r := cli(t, nil, args("counters", "repair", "lost-update", "op-1", "-outcome", "missing")...)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "if the counter did receive the increment of 10, it counts it twice")
	okJSON(t, &list, args("counters", "unapplied", "-settle", "0s")...)
	assert.Len(t, list.Unapplied, 2, "neither the dry run nor the refusal settled anything")

	assert.Contains(t, ok(t, args("counters", "repair", "lost-update", "op-1", "-outcome", "missing", "-yes")...), "incremented by 10 and marked applied")
	assert.Contains(t, ok(t, args("counters", "repair", "lost-response", "op-2", "-outcome", "applied", "-yes")...), "marked applied (the counter already held the increment)")
	direct, err := counters.New(session, counters.WithKeyspace(ks))
	require.NoError(t, err)
	for counter, want := range map[string]int64{"lost-update": 10, "lost-response": 100} {
		v, err := direct.Value(ctx, counter)
		require.NoError(t, err)
		assert.Equal(t, want, v, "each counted once: %s", counter)
	}
	assert.Contains(t, ok(t, args("counters", "unapplied", "-settle", "0s")...), "no unconfirmed operations")
	r = cli(t, nil, args("counters", "repair", "lost-update", "op-1", "-outcome", "missing", "-yes")...)
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "operation is not pending")
}

func TestEventCounterCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	// Events recorded three hours ago, by a log whose clock says so, are in closed buckets now.
	past := time.Now().Add(-3 * time.Hour)
	old, err := events.NewLog(session, events.WithKeyspace(ks), events.WithClock(func() time.Time { return past }), events.WithoutClockCheck())
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, old.Record(ctx, events.Event{Counter: "views", ID: fmt.Sprint("old-", i), Delta: 5, Time: past}))
	}
	recent, err := events.NewLog(session, events.WithKeyspace(ks))
	require.NoError(t, err)
	require.NoError(t, recent.Record(ctx, events.Event{Counter: "views", ID: "new", Delta: 1, Time: time.Now()}))

	args := func(a ...string) []string { return append(a, "-keyspace", ks) }
	var total struct{ Total int64 }
	okJSON(t, &total, args("counter", "total", "views")...)
	assert.EqualValues(t, 21, total.Total)
	var roll struct {
		Total  int64
		Folded int
	}
	dry := ok(t, args("counter", "rollup", "views", "-dry-run")...)
	assert.Contains(t, dry, "will fold 1 closed bucket(s) of views: watermark to ")
	assert.Contains(t, dry, "rolled-up total 20\ndry run: nothing written")
	okJSON(t, &roll, args("counter", "rollup", "views")...)
	assert.EqualValues(t, 20, roll.Total, "the closed bucket is folded, the open one is not")
	assert.Equal(t, 1, roll.Folded, "the dry run folded nothing")
	okJSON(t, &roll, args("counter", "rollup", "views")...)
	assert.Equal(t, 0, roll.Folded, "a second rollup has nothing to fold")
	assert.Contains(t, ok(t, args("counter", "total", "views")...), "views    21")
}
