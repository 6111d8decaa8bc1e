package otelobs_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/metrics/otelobs"
	"github.com/cassdedup/cassdedup/outbox"
)

// A relay's passes become the outbox's metrics: hand OnPass to Relay.Run.
func ExampleObserveRelay() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = provider.Shutdown(context.Background()) }()
	relayMetrics, err := otelobs.ObserveRelay("orders", otelobs.WithMeterProvider(provider))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = relayMetrics.Unregister() }()
	// relay.Run(ctx, relayMetrics.OnPass) reports every pass; here one is reported by hand.
	relayMetrics.OnPass(outbox.Stats{Shards: 16, Published: 42, Waiting: 3}, nil)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			if m.Name == "cassdedup.outbox.published" {
				fmt.Println(m.Name, data.DataPoints[0].Value)
			}
		case metricdata.Gauge[float64]:
			if m.Name == "cassdedup.outbox.pending" {
				fmt.Println(m.Name, data.DataPoints[0].Value)
			}
		}
	}
	// Output:
	// cassdedup.outbox.pending 3
	// cassdedup.outbox.published 42
}
