package otelobs

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// observe registers, on the meter of the options' provider, the gauges and counters defined
// ({name, unit, description}) and one callback that observes, at every collection, the values
// read returns for them, in the same order, each with the attribute attr.
func observe(opts []Option, attr attribute.KeyValue, gauges, counters [][3]string, read func() ([]float64, []int64)) (metric.Registration, error) {
	s := settings{meters: otel.GetMeterProvider()}
	if err := optcheck.Apply(ErrInvalidOption, &s, opts); err != nil {
		return nil, err
	}
	meter := s.meters.Meter(ScopeName)
	gs, err := newInstruments(meter.Float64ObservableGauge, gauges)
	if err != nil {
		return nil, err
	}
	cs, err := newInstruments(meter.Int64ObservableCounter, counters)
	if err != nil {
		return nil, err
	}
	attrs := metric.WithAttributes(attr)
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		gv, cv := read()
		for i, v := range gv {
			o.ObserveFloat64(gs[i], v, attrs)
		}
		for i, v := range cv {
			o.ObserveInt64(cs[i], v, attrs)
		}
		return nil
	}, append(observables(gs), observables(cs)...)...)
}

// newInstruments makes one instrument per definition {name, unit, description}, in order, with
// create: the Meter's method for the kind (Int64ObservableCounter, Float64ObservableGauge).
func newInstruments[I any, O any](create func(string, ...O) (I, error), defs [][3]string) ([]I, error) {
	out := make([]I, len(defs))
	for i, def := range defs {
		// WithUnit and WithDescription apply to every kind of instrument, so they are an O.
		unit, desc := any(metric.WithUnit(def[1])).(O), any(metric.WithDescription(def[2])).(O)
		var err error
		if out[i], err = create(def[0], unit, desc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func observables[T metric.Observable](in []T) []metric.Observable {
	out := make([]metric.Observable, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}
