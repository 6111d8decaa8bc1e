package otelobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
)

// TestObserveLogReportsTheEventLog collects a Log's lag and counters. The session is never
// connected: an event older than the retention is refused before any I/O, and counted.
func TestObserveLogReportsTheEventLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	err = log.Record(ctx, events.Event{Counter: "c", ID: "old", Delta: 1, Time: time.Now().Add(-8 * 24 * time.Hour)})
	require.ErrorIs(t, err, events.ErrEventExpired)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	reg, err := otelobs.ObserveLog("orders", log, otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]float64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Gauge[float64]:
			assert.Equal(t, "s", m.Unit)
			for _, dp := range data.DataPoints {
				assert.Equal(t, "orders", attr(dp.Attributes, "store"))
				got[m.Name] = dp.Value
			}
		case metricdata.Sum[int64]:
			assert.True(t, data.IsMonotonic, m.Name)
			for _, dp := range data.DataPoints {
				assert.Equal(t, "orders", attr(dp.Attributes, "store"))
				got[m.Name] = float64(dp.Value)
			}
		}
	}
	assert.Equal(t, map[string]float64{"cassdedup.eventlog.rollup.lag": 0, "cassdedup.eventlog.late": 0,
		"cassdedup.eventlog.expired": 1, "cassdedup.eventlog.rollup.failures": 0, "cassdedup.eventlog.rollup.stalls": 0}, got)
	require.NoError(t, reg.Unregister())
	_, err = otelobs.ObserveLog("orders", nil)
	require.ErrorIs(t, err, otelobs.ErrInvalidOption)
	_, err = otelobs.ObserveLog("orders", log, nil)
	require.ErrorIs(t, err, otelobs.ErrInvalidOption)
}
