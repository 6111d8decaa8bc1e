package guard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/faultproxy"
	"github.com/cassdedup/cassdedup/testnode"
)

// faultyGuards returns a guard that reaches the node through a fault proxy (client timeout 2s)
// and one that reaches it directly, on the same fresh keyspace.
func faultyGuards(t *testing.T) (proxied, direct *guard.Guard, p *faultproxy.Proxy) {
	t.Helper()
	n := testnode.NewProxied(t)
	proxied, err := guard.New(n.Proxied, guard.WithKeyspace(n.Keyspace))
	require.NoError(t, err)
	direct, err = guard.New(n.Direct, guard.WithKeyspace(n.Keyspace))
	require.NoError(t, err)
	return proxied, direct, n.Proxy
}

// TestProcessBatchLostExchanges loses one exchange of a poll of five messages: the claim
// batch's response (it applied), the claim batch's request (it never arrived), or the
// completion batch's response (it applied). Each time the serial read of the batch's rows
// settles the outcome: every handler runs once, every message is Processed, and a redelivery
// through another consumer finds them all Duplicate.
func TestProcessBatchLostExchanges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mode faultproxy.Mode
		skip int // matching exchanges let through first: 1 skips the claim batch
	}{
		{"claim-response", faultproxy.DropResponse, 0},
		{"claim-request", faultproxy.DropRequest, 0},
		{"finish-response", faultproxy.DropResponse, 1},
	}
	proxied, direct, p := faultyGuards(t)
	ctx := context.Background()
	for _, tc := range cases {
		marker := "lost-" + tc.name
		var poll []guard.Message
		for i := range 5 {
			poll = append(poll, guard.Message{Scope: guard.Scope{Group: "g", Topic: tc.name}, ID: fmt.Sprintf("%s-%d", marker, i),
				Payload: []byte("x"), Time: time.Now()})
		}
		rc := newRunCounter()
		before := proxied.BatchStats()
		lost := p.Lost()
		p.ArmAfter(marker, tc.mode, tc.skip, 1, nil)
		res, err := proxied.ProcessBatch(ctx, poll, rc.handle)
		require.NoError(t, err)
		require.Equal(t, lost+1, p.Lost(), "%s: one exchange was lost", tc.name)
		for i, r := range res {
			assert.Equal(t, guard.Processed, r.Outcome, "%s %s: %v", tc.name, poll[i].ID, r.Err)
			assert.Equal(t, 1, rc.count(poll[i].ID), "%s %s ran once", tc.name, poll[i].ID)
		}
		after := proxied.BatchStats()
		assert.EqualValues(t, 1, after.UnknownOutcomes-before.UnknownOutcomes, tc.name)
		assert.EqualValues(t, 1, after.ResolvedOutcomes-before.ResolvedOutcomes, tc.name)

		res, err = direct.ProcessBatch(ctx, poll, rc.handle)
		require.NoError(t, err)
		for i, r := range res {
			assert.Equal(t, guard.Duplicate, r.Outcome, "%s %s redelivered: %v", tc.name, poll[i].ID, r.Err)
			assert.Equal(t, 1, rc.count(poll[i].ID), "%s %s still ran once", tc.name, poll[i].ID)
		}
	}
}
