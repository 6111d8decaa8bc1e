package otelobs_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
)

// BenchmarkObserve measures what one observation, and one span, cost the store that reports
// them, with the SDK's providers.
func BenchmarkObserve(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	defer func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) }()
	o, err := otelobs.New("orders", otelobs.WithMeterProvider(mp), otelobs.WithTracerProvider(tp))
	if err != nil {
		b.Fatal(err)
	}
	for _, ob := range []lwt.Observation{
		{Kind: lwt.ObservedLWT, Op: "claim", Applied: true, Latency: 2 * time.Millisecond},
		{Kind: lwt.ObservedClaim},
	} {
		b.Run(ob.Kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o.Observe(ob)
			}
		})
	}
	b.Run("span", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			_, end := o.StartSpan(ctx, "claim", lwt.Key{"t", "k"})
			end(nil)
		}
	})
}
