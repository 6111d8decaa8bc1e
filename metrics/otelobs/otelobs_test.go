package otelobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
	"github.com/cassdedup/cassdedup/testnode"
)

// spansByName indexes the ended spans by name; each name must occur once.
func spansByName(t *testing.T, spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	t.Helper()
	out := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		require.NotContains(t, out, s.Name, "one span of each phase")
		out[s.Name] = s
	}
	return out
}

func TestSpansOfOneExecuteOnce(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs, err := otelobs.New("orders", otelobs.WithTracerProvider(tp), otelobs.WithMeterProvider(sdkmetric.NewMeterProvider()), otelobs.WithKeys())
	require.NoError(t, err)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(obs))
	require.NoError(t, err)

	// The caller's own span (an HTTP request's) is the parent of the execute span.
	ctx, request := tp.Tracer("test").Start(context.Background(), "POST /charges")
	var inFn trace.SpanContext
	_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("tenant-1", "charge-1"), func(ctx context.Context) ([]byte, error) {
		inFn = trace.SpanContextFromContext(ctx)
		return []byte("ok"), nil
	})
	require.NoError(t, err)
	request.End()

	got := spansByName(t, spans.GetSpans())
	require.Len(t, got, 5)
	exec := got["cassdedup.execute"]
	assert.Equal(t, request.SpanContext().SpanID(), exec.Parent.SpanID())
	for _, phase := range []string{"cassdedup.claim", "cassdedup.run", "cassdedup.commit"} {
		s := got[phase]
		assert.Equal(t, exec.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of execute", phase)
		assert.Equal(t, exec.SpanContext.TraceID(), s.SpanContext.TraceID(), phase)
		assert.Equal(t, codes.Unset, s.Status.Code, phase)
		assert.Contains(t, s.Attributes, attribute.String("store", "orders"), phase)
		assert.Contains(t, s.Attributes, attribute.String("cassdedup.key", "[tenant-1 charge-1]"), phase)
		assert.False(t, s.StartTime.Before(exec.StartTime), phase)
		assert.False(t, s.EndTime.After(exec.EndTime), phase)
	}
	assert.Equal(t, got["cassdedup.run"].SpanContext.SpanID(), inFn.SpanID(), "the function runs under the run span")
	assert.False(t, got["cassdedup.claim"].EndTime.After(got["cassdedup.run"].StartTime), "claim, then run")
	assert.False(t, got["cassdedup.run"].EndTime.After(got["cassdedup.commit"].StartTime), "run, then commit")

	// A failing function: its run, its commit (the release) and the call end in error.
	spans.Reset()
	failing := errors.New("card network down")
	_, err = store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("tenant-1", "charge-2"), func(context.Context) ([]byte, error) { return nil, failing })
	require.ErrorIs(t, err, failing)
	got = spansByName(t, spans.GetSpans())
	require.Len(t, got, 4)
	assert.False(t, got["cassdedup.execute"].Parent.IsValid(), "a root span without a caller's")
	assert.Equal(t, codes.Unset, got["cassdedup.claim"].Status.Code)
	for _, phase := range []string{"cassdedup.run", "cassdedup.commit", "cassdedup.execute"} {
		assert.Equal(t, codes.Error, got[phase].Status.Code, phase)
		assert.Equal(t, "card network down", got[phase].Status.Description, phase)
		require.Len(t, got[phase].Events, 1, phase)
		assert.Equal(t, "exception", got[phase].Events[0].Name, phase)
	}

	// A replay: the call and its claim, nothing ran.
	spans.Reset()
	_, err = store.ExecuteOnce(context.Background(), lwt.IdempotencyKey("tenant-1", "charge-1"), func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
	got = spansByName(t, spans.GetSpans())
	assert.Len(t, got, 2)
	assert.Contains(t, got, "cassdedup.claim")
}

func TestMetricsOfKnownOperations(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelobs.New("orders", otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(obs))
	require.NoError(t, err)
	ctx := context.Background()
	for range 2 { // claim and complete, then a rejected claim and a replay
		_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("t", "k"), func(context.Context) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	assert.Equal(t, otelobs.ScopeName, rm.ScopeMetrics[0].Scope.Name)
	lwts := map[string]uint64{}
	observed := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Histogram[float64]:
			require.Equal(t, "cassdedup.lwt.duration", m.Name)
			assert.Equal(t, "s", m.Unit)
			for _, dp := range data.DataPoints {
				assert.Equal(t, otelobs.Buckets(), dp.Bounds)
				lwts[attr(dp.Attributes, "store")+"/"+attr(dp.Attributes, "op")+"/"+attr(dp.Attributes, "result")] = dp.Count
			}
		case metricdata.Sum[int64]:
			require.Equal(t, "cassdedup.observations", m.Name)
			assert.True(t, data.IsMonotonic)
			for _, dp := range data.DataPoints {
				observed[attr(dp.Attributes, "store")+"/"+attr(dp.Attributes, "kind")] = dp.Value
			}
		}
	}
	assert.Equal(t, map[string]uint64{"orders/claim/applied": 1, "orders/claim/not_applied": 1, "orders/complete/applied": 1}, lwts)
	assert.Equal(t, map[string]int64{"orders/claim": 1, "orders/complete": 1, "orders/replay": 1}, observed)
}

func attr(set attribute.Set, key string) string {
	v, _ := set.Value(attribute.Key(key))
	return v.AsString()
}

func TestNilProvidersRefused(t *testing.T) {
	_, err := otelobs.New("s", otelobs.WithMeterProvider(nil))
	assert.ErrorIs(t, err, otelobs.ErrInvalidOption)
	_, err = otelobs.New("s", otelobs.WithTracerProvider(nil))
	assert.ErrorIs(t, err, otelobs.ErrInvalidOption)
	_, err = otelobs.New("s", nil)
	assert.ErrorIs(t, err, otelobs.ErrInvalidOption)
}
