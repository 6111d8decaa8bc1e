// Package otelobs reports what cassdedup's stores do to OpenTelemetry: call [New](name) and pass
// the [Observer] to a store's WithObserver option. It records metrics, and spans around
// the claim, the run and the commit of every ExecuteOnce. It lives in a module of its own, so
// the library's importers do not get OpenTelemetry unless they ask.
//
// New returns one lwt.Observer per store (an lwt.Store, an events.Log or guard.Guard, a
// counters.Store), labelled with the store's name. Its instruments, with the attributes store,
// op, result and kind everywhere, as the Prometheus adapter's labels:
//
//	cassdedup.lwt.duration {store,op,result}    histogram, s: conditional writes and serial reads;
//	                                            result applied, not_applied or error
//	cassdedup.write.duration {store,op,result}  histogram, s: plain writes; result ok or error
//	cassdedup.observations {store,kind}         counter: state transitions and outcomes, by
//	                                            lwt.ObservationKind
//
// The histograms advise bucket boundaries from 0.5 ms to 4 s in powers of two, which fit LWT
// latencies from one loopback node to several datacenters.
//
// The Observer implements lwt.SpanObserver, so an ExecuteOnce (and a Guard.Process) is traced as
// a span "cassdedup.execute" with the children "cassdedup.claim", "cassdedup.run" (the caller's
// function, whose ctx carries the span) and "cassdedup.commit". A phase that fails records its
// error and sets the span's status to Error.
//
// An Observer is safe for concurrent use and starts no goroutines.
package otelobs

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// ScopeName names the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/cassdedup/cassdedup/metrics/otelobs"

// ErrInvalidOption is returned by New for a nil option or provider.
var ErrInvalidOption = errors.New("otelobs: invalid option")

// Buckets returns the histograms' advised bucket boundaries in seconds: 0.5 ms to 4.096 s in
// powers of two, as the Prometheus adapter's.
func Buckets() []float64 {
	return []float64{0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096}
}

// Observer records one store's observations and traces its calls. Create it with New.
type Observer struct {
	store        attribute.KeyValue
	lwt, writes  metric.Float64Histogram
	observations metric.Int64Counter
	tracer       trace.Tracer
	keys         bool
}

// Option configures New. A bad one makes New fail with an error that names it.
type Option func(*settings) error

// set is an option that applies apply, or refuses, named by call, when bad.
func set(bad bool, call, why string, apply func(*settings)) Option {
	return optcheck.Set(ErrInvalidOption, bad, call, why, apply)
}

type settings struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	keys    bool
}

// WithMeterProvider sets where the metrics go (default: otel.GetMeterProvider()).
func WithMeterProvider(p metric.MeterProvider) Option {
	return set(p == nil, "WithMeterProvider(nil)", "no provider", func(s *settings) { s.meters = p })
}

// WithTracerProvider sets where the spans go (default: otel.GetTracerProvider()).
func WithTracerProvider(p trace.TracerProvider) Option {
	return set(p == nil, "WithTracerProvider(nil)", "no provider", func(s *settings) { s.tracers = p })
}

// WithKeys adds the record's key to every span as the attribute cassdedup.key. Off by default:
// spans often leave the organisation, and keys may name customers.
func WithKeys() Option {
	return set(false, "", "", func(s *settings) { s.keys = true })
}

// New returns the Observer of the store named store.
func New(store string, opts ...Option) (*Observer, error) {
	s := settings{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
	if err := optcheck.Apply(ErrInvalidOption, &s, opts); err != nil {
		return nil, err
	}
	meter := s.meters.Meter(ScopeName)
	o := &Observer{store: attribute.String("store", store), tracer: s.tracers.Tracer(ScopeName), keys: s.keys}
	var err error
	if o.lwt, err = meter.Float64Histogram("cassdedup.lwt.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of cassdedup's lightweight transactions (conditional writes) and serial reads."),
		metric.WithExplicitBucketBoundaries(Buckets()...)); err != nil {
		return nil, err
	}
	if o.writes, err = meter.Float64Histogram("cassdedup.write.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of cassdedup's plain writes: fast-path records, events, counter increments."),
		metric.WithExplicitBucketBoundaries(Buckets()...)); err != nil {
		return nil, err
	}
	if o.observations, err = meter.Int64Counter("cassdedup.observations", metric.WithUnit("{observation}"),
		metric.WithDescription("State transitions and outcomes of cassdedup's stores, by kind (lwt.ObservationKind).")); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records ob.
func (o *Observer) Observe(ob lwt.Observation) {
	ctx := context.Background()
	switch ob.Kind {
	case lwt.ObservedLWT:
		result := ob.Result()
		o.lwt.Record(ctx, ob.Latency.Seconds(), metric.WithAttributes(o.store, attribute.String("op", ob.Op), attribute.String("result", result)))
	case lwt.ObservedWrite:
		result := ob.Result()
		o.writes.Record(ctx, ob.Latency.Seconds(), metric.WithAttributes(o.store, attribute.String("op", ob.Op), attribute.String("result", result)))
	default:
		o.observations.Add(ctx, 1, metric.WithAttributes(o.store, attribute.String("kind", ob.Kind.String())))
	}
}

// StartSpan starts the span of one phase of ExecuteOnce (see lwt.SpanObserver).
func (o *Observer) StartSpan(ctx context.Context, phase string, key lwt.Key) (context.Context, func(error)) {
	attrs := []attribute.KeyValue{o.store}
	if o.keys {
		attrs = append(attrs, attribute.String("cassdedup.key", fmt.Sprint([]any(key))))
	}
	ctx, span := o.tracer.Start(ctx, "cassdedup."+phase, trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
