package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/bloom"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestOwnersCommands: owners list shows a group's partitions with their epochs and live leases;
// owners forget is a dry run unless -yes, then deletes the rows nobody holds a lease on (only
// that group's), after which Own at a small generation takes the partition again.
func TestOwnersCommands(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithOwnership(30*time.Second, 5*time.Second))
	require.NoError(t, err)
	own := func(group string, p int32, epoch uint64) error {
		pre, err := bloom.NewPreCheck(group, bloom.WithExpectedItems(1000))
		require.NoError(t, err)
		return g.Own(ctx, guard.Scope{Group: group, Topic: "invoices", Partition: p}, epoch, pre)
	}
	require.NoError(t, own("billing", 0, 9))
	g.Disown(guard.Scope{Group: "billing", Topic: "invoices", Partition: 0})
	require.NoError(t, own("billing", 1, 9))
	defer g.Disown(guard.Scope{Group: "billing", Topic: "invoices", Partition: 1})
	require.NoError(t, own("other", 0, 2))
	g.Disown(guard.Scope{Group: "other", Topic: "invoices", Partition: 0})
	require.ErrorIs(t, own("billing", 0, 1), lwt.ErrEpochRegressed)
	args := func(a ...string) []string { return append(a, "-keyspace", ks) }

	type listing struct {
		Owners []ownerView `json:"owners"`
	}
	var l listing
	okJSON(t, &l, args("owners", "list", "billing")...)
	require.Len(t, l.Owners, 2)
	lease := map[int32]string{}
	for _, o := range l.Owners {
		assert.Equal(t, int64(9), o.Epoch)
		lease[o.Partition] = o.LeaseHolder
	}
	assert.Empty(t, lease[0])
	assert.NotEmpty(t, lease[1], "partition 1's lease is live")
	assert.Contains(t, ok(t, args("owners", "list", "billing")...), "live: ")

	out := ok(t, args("owners", "forget", "billing")...)
	assert.Contains(t, out, "dry run: nothing written", "a dry run unless -yes")
	assert.Contains(t, out, "forget 1 of the 2 partitions")
	okJSON(t, &l, args("owners", "list", "billing")...)
	require.Len(t, l.Owners, 2, "the dry run deleted nothing")

	var done struct {
		DryRun bool        `json:"dry_run"`
		Owners []ownerView `json:"owners"`
	}
	okJSON(t, &done, args("owners", "forget", "billing", "-yes")...)
	assert.False(t, done.DryRun)
	forgotten := map[int32]bool{}
	for _, o := range done.Owners {
		forgotten[o.Partition] = o.Forgotten
	}
	assert.Equal(t, map[int32]bool{0: true, 1: false}, forgotten, "the live lease is kept")
	okJSON(t, &l, args("owners", "list", "billing")...)
	require.Len(t, l.Owners, 1)
	okJSON(t, &l, args("owners", "list", "other")...)
	require.Len(t, l.Owners, 1, "another group's rows are not touched")
	require.NoError(t, own("billing", 0, 1), "forgotten: the small generation owns it")
	g.Disown(guard.Scope{Group: "billing", Topic: "invoices", Partition: 0})
}
