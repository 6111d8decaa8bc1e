package otelobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
	"github.com/cassdedup/cassdedup/outbox"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestRelayMetricsOfRealPasses runs a relay's passes on the node, one that publishes and one
// whose publisher fails, and checks what a collection reads after each.
func TestRelayMetricsOfRealPasses(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	clock := testnode.NewClock(time.Now())
	m, err := otelobs.ObserveRelayAt("orders", clock.Now, otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Unregister()) })
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

	st, err := relay.Poll(ctx)
	require.NoError(t, err)
	m.OnPass(st, err)
	got := collect(t, reader)
	assert.Equal(t, 3.0, got["cassdedup.outbox.published"])
	assert.Equal(t, 0.0, got["cassdedup.outbox.pending"])
	assert.Equal(t, float64(outbox.DefaultShards), got["cassdedup.outbox.leases"])
	assert.Equal(t, 0.0, got["cassdedup.outbox.publish.lag"])

	stage("order-late-000000001")
	fail = errors.New("broker unreachable")
	clock.Advance(10 * time.Second)
	st, err = relay.Poll(ctx)
	require.Error(t, err)
	m.OnPass(st, err)
	clock.Advance(5 * time.Second)
	got = collect(t, reader)
	assert.Equal(t, 1.0, got["cassdedup.outbox.failed_passes"])
	assert.Equal(t, 3.0, got["cassdedup.outbox.published"])
	assert.Equal(t, 15.0, got["cassdedup.outbox.publish.lag"], "the lag counts from the last pass without error")
	assert.Equal(t, 1.0, got["cassdedup.outbox.pending"], "the failed event stays pending")
	assert.Equal(t, 0.0, got["cassdedup.outbox.attempts"], "an unreachable broker counts nothing toward parking")
	assert.Equal(t, 1.0, got["cassdedup.outbox.transient_failures"])
	assert.Equal(t, st.Oldest.Seconds(), got["cassdedup.outbox.oldest_pending"])

	// The broker refuses the event for good: its second rejection parks it.
	fail = fmt.Errorf("%w: record over max.message.bytes", outbox.ErrRejected)
	for range 2 {
		time.Sleep(10 * time.Millisecond) // the event's backoff, on the relay's own clock
		st, err = relay.Poll(ctx)
		if errors.Is(err, outbox.ErrParked) {
			break
		}
		require.Error(t, err)
		m.OnPass(st, err)
	}
	require.ErrorIs(t, err, outbox.ErrParked)
	m.OnPass(st, err)
	got = collect(t, reader)
	assert.Equal(t, 1.0, got["cassdedup.outbox.parked"])
	assert.Equal(t, 0.0, got["cassdedup.outbox.expired"])
	assert.Equal(t, 2.0, got["cassdedup.outbox.attempts"])
	assert.Equal(t, 0.0, got["cassdedup.outbox.pending"])
	assert.Zero(t, got["cassdedup.outbox.leases_lost"])
}

// collect reads every metric's one data point, with relay=orders.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Gauge[float64]:
				require.Len(t, data.DataPoints, 1, m.Name)
				assert.Equal(t, "orders", attr(data.DataPoints[0].Attributes, "relay"))
				out[m.Name] = data.DataPoints[0].Value
			case metricdata.Sum[int64]:
				require.Len(t, data.DataPoints, 1, m.Name)
				assert.True(t, data.IsMonotonic, m.Name)
				assert.Equal(t, "orders", attr(data.DataPoints[0].Attributes, "relay"))
				out[m.Name] = float64(data.DataPoints[0].Value)
			}
		}
	}
	return out
}

func TestObserveRelayRefusesANilProvider(t *testing.T) {
	_, err := otelobs.ObserveRelay("r", otelobs.WithMeterProvider(nil))
	assert.ErrorIs(t, err, otelobs.ErrInvalidOption)
}

// TestRelayHeldIntents: the held-back intents of the last pass (outbox.WithKeyOrder) are a
// gauge, replaced by each pass.
func TestRelayHeldIntents(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otelobs.ObserveRelay("orders", otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Unregister()) })
	m.OnPass(outbox.Stats{Held: 2, Waiting: 3}, nil)
	assert.Equal(t, 2.0, collect(t, reader)["cassdedup.outbox.held"])
	m.OnPass(outbox.Stats{}, nil)
	assert.Equal(t, 0.0, collect(t, reader)["cassdedup.outbox.held"], "the key's earlier intent settled")
}
