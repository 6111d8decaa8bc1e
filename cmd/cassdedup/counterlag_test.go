package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestCounterLagCommand shows a counter whose rollup never ran for three hours: exit 3 past
// -max-lag, 0 within it, and 0 once a rollup caught up.
func TestCounterLagCommand(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	past := time.Now().Add(-3 * time.Hour)
	old, err := events.NewLog(session, events.WithKeyspace(ks), events.WithClock(func() time.Time { return past }), events.WithoutClockCheck())
	require.NoError(t, err)
	require.NoError(t, old.Record(ctx, events.Event{Counter: "views", ID: "old", Delta: 5, Time: past}))
	args := func(a ...string) []string { return append(a, "-keyspace", ks) }

	r := cli(t, nil, args("counter", "lag", "views", "-max-lag", "1h")...)
	require.Equal(t, exitStalled, r.code, r.stderr)
	assert.Contains(t, r.stdout, "STALLED: past -max-lag 1h0m0s; unfolded rows expire from ")
	assert.Contains(t, r.stderr, "rollup stalled: views is 3h")
	assert.Contains(t, r.stderr, `"a stalled rollup"`)

	var lag struct {
		LagSeconds      float64 `json:"lag_seconds"`
		Stalled         bool
		UnfoldedWindows int `json:"unfolded_windows"`
	}
	okJSON(t, &lag, args("counter", "lag", "views", "-max-lag", "4h")...)
	assert.InDelta(t, 3*3600, lag.LagSeconds, 120)
	assert.False(t, lag.Stalled)
	assert.Equal(t, 1, lag.UnfoldedWindows)

	ok(t, args("counter", "rollup", "views")...)
	out := ok(t, args("counter", "lag", "views", "-max-lag", "1h")...)
	assert.Contains(t, out, " ok")
	r = cli(t, nil, args("counter", "lag", "views", "-max-lag", "0s")...)
	assert.Equal(t, exitUsage, r.code, r.stderr)
}

// TestCounterLagMaxLagWithinRetention: a -max-lag past half the retention (what
// events.WithMaxRollupLag allows) is refused, so no limit answers "ok" for a counter whose
// unfolded rows may expire first; the default (1h) is brought down to half a shorter -retention,
// and says so: a counter 40 minutes behind under a 1h retention is stalled.
func TestCounterLagMaxLagWithinRetention(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	past := time.Now().Add(-40 * time.Minute)
	old, err := events.NewLog(session, events.WithKeyspace(ks), events.WithLogRetention(time.Hour),
		events.WithClock(func() time.Time { return past }), events.WithoutClockCheck())
	require.NoError(t, err)
	require.NoError(t, old.Record(ctx, events.Event{Counter: "views", ID: "old", Delta: 5, Time: past}))
	args := func(a ...string) []string { return append(a, "-keyspace", ks) }

	r := cli(t, nil, args("counter", "lag", "views", "-retention", "1h")...)
	require.Equal(t, exitStalled, r.code, r.stderr)
	assert.Contains(t, r.stderr, "-max-lag is 30m0s, half -retention 1h0m0s")
	assert.Contains(t, r.stdout, "STALLED: past -max-lag 30m0s")

	r = cli(t, nil, args("counter", "lag", "views", "-retention", "0s")...)
	require.Equal(t, exitUsage, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "-max-lag is", "a retention refused brings no limit down")

	for _, a := range [][]string{{"-retention", "1h", "-max-lag", "50m"}, {"-max-lag", "96h"}} {
		r = cli(t, nil, args(append([]string{"counter", "lag", "views"}, a...)...)...)
		require.Equal(t, exitUsage, r.code, "%v: %s", a, r.stderr)
		assert.Contains(t, r.stderr, "-max-lag", a)
		assert.Contains(t, r.stderr, "half the retention", a)
	}
}
