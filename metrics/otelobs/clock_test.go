package otelobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
)

// TestObserveClockReportsTheReading collects a component's clock reading (what outbox's Clock
// methods return).
func TestObserveClockReportsTheReading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	r := clock.Reading{Offset: -90 * time.Second, Bound: 3 * time.Millisecond, Age: 10 * time.Second, Measured: true,
		Measurements: 2, Failures: 1, Refusals: 5}
	reg, err := otelobs.ObserveClock("orders-relay", func() clock.Reading { return r }, otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Unregister() })
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]float64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Gauge[float64]:
			for _, dp := range data.DataPoints {
				assert.Equal(t, "orders-relay", attr(dp.Attributes, "component"))
				got[m.Name] = dp.Value
			}
		case metricdata.Sum[int64]:
			for _, dp := range data.DataPoints {
				assert.Equal(t, "orders-relay", attr(dp.Attributes, "component"))
				got[m.Name] = float64(dp.Value)
			}
		}
	}
	assert.InDeltaMapValues(t, map[string]float64{
		"cassdedup.clock.offset": -90, "cassdedup.clock.offset.bound": 0.003, "cassdedup.clock.measurement.age": 10,
		"cassdedup.clock.measurements": 2, "cassdedup.clock.measurement.failures": 1, "cassdedup.clock.refusals": 5,
	}, got, 1e-9)

	_, err = otelobs.ObserveClock("x", nil)
	require.ErrorIs(t, err, otelobs.ErrInvalidOption)
}
