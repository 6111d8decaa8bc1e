package otelobs_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
)

// What a store reports through its observer becomes instruments of the meter provider given.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	observer, err := otelobs.New("payments", otelobs.WithMeterProvider(provider))
	if err != nil {
		fmt.Println(err)
		return
	}
	// A store calls its observer; here one applied claim and one replay are reported by hand.
	observer.Observe(lwt.Observation{Kind: lwt.ObservedLWT, Op: "claim", Applied: true, Latency: 3 * time.Millisecond})
	observer.Observe(lwt.Observation{Kind: lwt.ObservedReplay})
	var data metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &data); err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, scope := range data.ScopeMetrics {
		for _, m := range scope.Metrics {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// [cassdedup.lwt.duration cassdedup.observations]
}
