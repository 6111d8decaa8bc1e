package counters

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/faultproxy"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/lwt/cas"
	"github.com/cassdedup/cassdedup/testnode"
)

// proxiedStore returns a store reaching the node through a fault proxy (client timeout 2s) and
// one reaching it directly, on the same fresh keyspace.
func proxiedStore(t *testing.T) (proxied, direct *Store, p *faultproxy.Proxy) {
	t.Helper()
	n := testnode.NewProxied(t)
	proxied, err := New(n.Proxied, WithKeyspace(n.Keyspace))
	require.NoError(t, err)
	direct, err = New(n.Direct, WithKeyspace(n.Keyspace))
	require.NoError(t, err)
	return proxied, direct, n.Proxy
}

// TestClaimOutcomeUnknownResolvedLikeLWT: a claim that never reached the node is read back,
// found absent (so it did not apply: never "unknown"), sent again and applied once; a claim
// whose response and resolving reads are all lost is an *cas.OutcomeUnknownError matching
// lwt.ErrOutcomeUnknown with the driver's error reachable, and a later retry applies it once.
func TestClaimOutcomeUnknownResolvedLikeLWT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, direct, p := proxiedStore(t)

	// Each Increment first writes its repair-index row, which carries the id too: let it through.
	p.ArmAfter("lost-claim-op", faultproxy.DropRequest, 1, 1, nil)
	out, err := s.Increment(ctx, Op{Counter: "lost-claim", ID: "lost-claim-op", Delta: 3})
	require.NoError(t, err)
	assert.Equal(t, Applied, out)
	assert.Equal(t, 1, p.Lost())
	v, err := direct.Value(ctx, "lost-claim")
	require.NoError(t, err)
	assert.EqualValues(t, 3, v)

	p.ArmAfter("op-2", faultproxy.DropResponse, 1, 1000, nil)
	_, err = s.Increment(ctx, Op{Counter: "unknown", ID: "op-2", Delta: 5})
	require.ErrorIs(t, err, lwt.ErrOutcomeUnknown)
	var ou *cas.OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, "claim", ou.Op)
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || cas.IsOutcomeUnknown(ou.Err), "the driver's error is reachable: %v", err)
	p.Arm("op-2", faultproxy.DropResponse, 0, nil)

	// The lost claim applied; nothing was incremented, so the claim is reported for repair and a
	// retry says so instead of incrementing twice.
	_, err = direct.Increment(ctx, Op{Counter: "unknown", ID: "op-2", Delta: 5})
	assert.ErrorIs(t, err, ErrUnconfirmed)
	v, err = direct.Value(ctx, "unknown")
	require.NoError(t, err)
	assert.Zero(t, v)
}
