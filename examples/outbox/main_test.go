package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/leakcheck"
	"github.com/cassdedup/cassdedup/internal/testnode"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestChainEveryAcceptedOrderTakesEffectOnce runs the chain on the real node and broker: 300
// orders from 8 clients that time out, retry and double-submit; every accepted order's event
// reaches the consumer and takes effect exactly once. Then a catch-up phase of 200 orders placed
// while the consumer is stopped, and a phase of 100 orders on plain ExecuteOnce: the same, and
// the figures of every phase are filled in.
func TestChainEveryAcceptedOrderTakesEffectOnce(t *testing.T) {
	brokers := testnode.KafkaBrokers(t)
	session, ks := testnode.NewSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	s, err := run(ctx, session, config{brokers: brokers, keyspace: ks, orders: 300, clients: 8, catchup: 200, plain: 100}, &out)
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
	p := s.Plain
	require.NotNil(t, p, "the plain phase ran")
	assert.Equal(t, 100, p.Accepted)
	assert.Equal(t, 100, p.Applied)
	assert.Zero(t, p.Lost)
	assert.Zero(t, p.DuplicatedEffects)
	assert.True(t, p.EffectsExact, "the plain phase's counter total is the sum of its orders")
	assert.Equal(t, p.AcceptedPerS, s.PlainAcceptedPerS)
	assert.InDelta(t, s.AcceptedPerS/p.AcceptedPerS, s.AcceptedVsPlain, 1e-9)
	c := s.Catchup
	require.NotNil(t, c, "the catch-up phase ran")
	assert.Equal(t, 200, c.Accepted)
	assert.Equal(t, 200, c.Applied)
	assert.Zero(t, c.Lost)
	assert.Zero(t, c.DuplicatedEffects)
	assert.True(t, c.EffectsExact, "the catch-up counter's total is the sum of its orders")
	assert.Positive(t, s.CatchupMsgsPerS)
	assert.Equal(t, c.CatchupMsgsPerS, s.CatchupMsgsPerS)
}
