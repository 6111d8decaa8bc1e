package otelobs

import "go.opentelemetry.io/otel/metric"

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
