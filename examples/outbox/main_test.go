package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestChainEveryAcceptedOrderTakesEffectOnce runs the chain on the real node and broker: 300
// orders from 8 clients that time out, retry and double-submit; every accepted order's event
// reaches the consumer and takes effect exactly once. Then a catch-up phase of 200 orders placed
// while the consumer is stopped, and the comparison's four rounds of 100 orders from 12 clients
// (two on plain ExecuteOnce, two on the repeatable service): the same, and the figures of every
// phase are filled in.
func TestChainEveryAcceptedOrderTakesEffectOnce(t *testing.T) {
	brokers := testnode.KafkaBrokers(t)
	session, ks := testnode.NewSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	s, err := run(ctx, session, config{brokers: brokers, keyspace: ks, orders: 300, clients: 8, catchup: 200, plain: 100, compareClients: 12}, &out)
	t.Log(out.String())
	require.NoError(t, err)
	assert.Equal(t, 300, s.Accepted, "every order was acknowledged in the end")
	assert.Greater(t, s.Requests, int64(300), "retries and duplicates were sent")
	assert.Zero(t, s.Lost)
	assert.Zero(t, s.DuplicatedEffects)
	assert.True(t, s.EffectsExact, "the counter's total is the sum of the accepted orders")
	assert.Equal(t, 300, s.Applied)
	assert.GreaterOrEqual(t, s.Published, int64(300))
	assert.Positive(t, s.AcceptedPerS)
	assert.GreaterOrEqual(t, s.ConsumerLagS, 0.0)
	assert.GreaterOrEqual(t, s.RelayReadsPerIntent, 1.0, "every published intent was read at least once")
	exactPhase(t, "plain", s.Plain, 100)
	services := make([]string, len(s.Rounds))
	for i, r := range s.Rounds {
		services[i] = r.Service
		assert.Equal(t, 100, r.Accepted, "round %d", i+1)
		assert.True(t, r.EffectsExact, "round %d", i+1)
		assert.Zero(t, r.Lost+r.DuplicatedEffects, "round %d", i+1)
	}
	assert.Equal(t, []string{"repeatable", "plain", "plain", "repeatable"}, services)
	r := s.Rounds
	assert.InDelta(t, 200/(r[1].AcceptedSeconds+r[2].AcceptedSeconds), s.PlainAcceptedPerS, 1e-9)
	assert.InDelta(t, 200/(r[0].AcceptedSeconds+r[3].AcceptedSeconds), s.RepeatableAcceptedPerS, 1e-9)
	assert.Equal(t, 12, s.CompareClients)
	assert.InDelta(t, s.RepeatableAcceptedPerS/s.PlainAcceptedPerS, s.AcceptedVsPlain, 1e-9)
	c := exactPhase(t, "catch-up", s.Catchup, 200)
	assert.Positive(t, s.CatchupMsgsPerS)
	assert.Equal(t, c.CatchupMsgsPerS, s.CatchupMsgsPerS)
}

// exactPhase requires that the phase ran, and asserts that every one of its orders was
// acknowledged and took effect once.
func exactPhase(t *testing.T, name string, p *Summary, orders int) *Summary {
	t.Helper()
	require.NotNil(t, p, "the %s phase ran", name)
	assert.Equal(t, orders, p.Accepted, name)
	assert.Equal(t, orders, p.Applied, name)
	assert.Zero(t, p.Lost, name)
	assert.Zero(t, p.DuplicatedEffects, name)
	assert.True(t, p.EffectsExact, "the %s phase's counter total is the sum of its orders", name)
	return p
}
