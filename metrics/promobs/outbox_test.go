package promobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestRelayCollectorOfRealPasses runs a relay's passes on the node, one that publishes and one
// whose publisher fails, and checks what a scrape shows after each.
func TestRelayCollectorOfRealPasses(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	clock := testnode.NewClock(time.Now())
	c, err := promobs.NewRelayCollectorAt("orders", clock.Now, promobs.WithConstLabels(prometheus.Labels{"service": "checkout"}))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	ctx := context.Background()

	store, err := lwt.NewStore(session, outbox.Table(ks))
	require.NoError(t, err)
	box, err := outbox.New(session, outbox.WithKeyspace(ks))
	require.NoError(t, err)
	stage := func(id string) {
		_, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey("shop", id), func(ctx context.Context) ([]byte, error) {
			return []byte("ok"), box.Stage(ctx, outbox.Event{Type: "order.placed", Key: id, Payload: []byte(`{}`)})
		})
		require.NoError(t, err)
	}
	for i := range 3 {
		stage(fmt.Sprintf("order-%016d", i))
	}
	var fail error
	relay, err := outbox.NewRelay(session, outbox.PublisherFunc(func(context.Context, []outbox.Message) error { return fail }),
		outbox.WithKeyspace(ks), outbox.WithMaxAttempts(2), outbox.WithPublishBackoff(time.Millisecond, time.Millisecond),
		outbox.WithArrivalLag(time.Millisecond)) // the next pass finds an intent staged before it
	require.NoError(t, err)

	clock.Advance(3 * time.Second)
	got := gauges(t, reg)
	assert.Equal(t, 3.0, got["cassdedup_outbox_publish_lag_seconds"], "no pass yet: the lag counts from the start")
	assert.Zero(t, got["cassdedup_outbox_last_pass_timestamp_seconds"])

	st, err := relay.Poll(ctx)
	require.NoError(t, err)
	c.OnPass(st, err)
	got = gauges(t, reg)
	assert.Equal(t, 3.0, got["cassdedup_outbox_published_total"])
	assert.Equal(t, 0.0, got["cassdedup_outbox_pending_intents"])
	assert.Equal(t, float64(outbox.DefaultShards), got["cassdedup_outbox_leases_held"])
	assert.Equal(t, 0.0, got["cassdedup_outbox_publish_lag_seconds"])
	assert.Equal(t, float64(clock.Now().UnixNano())/1e9, got["cassdedup_outbox_last_pass_timestamp_seconds"])

	stage("order-late-000000001")
	fail = errors.New("broker unreachable")
	clock.Advance(10 * time.Second)
	st, err = relay.Poll(ctx)
	require.Error(t, err)
	c.OnPass(st, err)
	clock.Advance(5 * time.Second)
	got = gauges(t, reg)
	assert.Equal(t, 1.0, got["cassdedup_outbox_failed_passes_total"])
	assert.Equal(t, 3.0, got["cassdedup_outbox_published_total"])
	assert.Equal(t, 15.0, got["cassdedup_outbox_publish_lag_seconds"], "the lag counts from the last pass without error")
	assert.Equal(t, 1.0, got["cassdedup_outbox_pending_intents"], "the failed event stays pending")
	assert.Equal(t, 0.0, got["cassdedup_outbox_attempts_total"], "an unreachable broker counts nothing toward parking")
	assert.Equal(t, 1.0, got["cassdedup_outbox_transient_failures_total"])
	assert.Equal(t, st.Oldest.Seconds(), got["cassdedup_outbox_oldest_pending_seconds"])
	assert.Positive(t, st.Oldest)

	// The broker refuses the event for good: its second rejection parks it.
	fail = fmt.Errorf("%w: record over max.message.bytes", outbox.ErrRejected)
	for range 2 {
		time.Sleep(10 * time.Millisecond) // the event's backoff, on the relay's own clock
		st, err = relay.Poll(ctx)
		if errors.Is(err, outbox.ErrParked) {
			break
		}
		require.Error(t, err)
		c.OnPass(st, err)
	}
	require.ErrorIs(t, err, outbox.ErrParked)
	c.OnPass(st, err)
	got = gauges(t, reg)
	assert.Equal(t, 1.0, got["cassdedup_outbox_parked_total"])
	assert.Equal(t, 0.0, got["cassdedup_outbox_expired_total"])
	assert.Equal(t, 2.0, got["cassdedup_outbox_attempts_total"])
	assert.Equal(t, 0.0, got["cassdedup_outbox_pending_intents"])
	assert.Equal(t, 3.0, got["cassdedup_outbox_failed_passes_total"], "the broker away, the first rejection, the second")
	assert.Equal(t, float64(outbox.DefaultShards), got["cassdedup_outbox_leases_held"])
	assert.Zero(t, got["cassdedup_outbox_leases_lost_total"])

	families := scrape(t, reg)
	for _, f := range families {
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			assert.Equal(t, map[string]string{"relay": "orders", "service": "checkout"}, labels, f.GetName())
		}
	}
	assert.Equal(t, dto.MetricType_COUNTER, families["cassdedup_outbox_published_total"].GetType())
	assert.Equal(t, dto.MetricType_GAUGE, families["cassdedup_outbox_pending_intents"].GetType())
}

// gauges scrapes reg and returns each family's one value.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, f := range scrape(t, reg) {
		require.Len(t, f.Metric, 1, name)
		if f.GetType() == dto.MetricType_COUNTER {
			out[name] = f.Metric[0].GetCounter().GetValue()
		} else {
			out[name] = f.Metric[0].GetGauge().GetValue()
		}
	}
	return out
}

func TestRelayCollectorOptionsValidated(t *testing.T) {
	for _, o := range []promobs.Option{nil, promobs.WithConstLabels(prometheus.Labels{"relay": "x"})} {
		_, err := promobs.NewRelayCollector("r", o)
		assert.ErrorIs(t, err, promobs.ErrInvalidOption)
	}
}

// TestRelayCollectorHeldIntents: the held-back intents of the last pass (outbox.WithKeyOrder)
// are a gauge, replaced by each pass.
func TestRelayCollectorHeldIntents(t *testing.T) {
	c, err := promobs.NewRelayCollector("orders")
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	c.OnPass(outbox.Stats{Held: 2, Waiting: 3}, nil)
	assert.Equal(t, 2.0, gauges(t, reg)["cassdedup_outbox_held_intents"])
	c.OnPass(outbox.Stats{}, nil)
	assert.Equal(t, 0.0, gauges(t, reg)["cassdedup_outbox_held_intents"], "the key's earlier intent settled")
}
