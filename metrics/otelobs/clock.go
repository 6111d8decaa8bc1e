package otelobs

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// ObserveClock reports what a component knows of its clock (a clock.Reading: the Clock method
// of outbox.Outbox, outbox.Relay, events.Log or guard.Guard), read at every collection, with the attribute
// component=name (the option WithMeterProvider; the others are ignored):
//
//	cassdedup.clock.offset              {component} gauge, s: the cluster's clock minus the
//	                                                component's (Reading.Offset)
//	cassdedup.clock.offset.bound        {component} gauge, s: how far the true offset may be
//	                                                from it (Reading.Bound)
//	cassdedup.clock.measurement.age     {component} gauge, s: since the last measurement that
//	                                                succeeded (-1: none yet)
//	cassdedup.clock.measurements        {component} counter: measurements made
//	cassdedup.clock.measurement.failures {component} counter: of them, failed
//	cassdedup.clock.refusals            {component} counter: calls refused because the offset
//	                                                was not known within their limit
//	                                                (clock.ErrOffset)
//
// Unregister the returned registration when the component is no longer used.
// docs/operating.md lists the alerts to set on them.
func ObserveClock(name string, read func() clock.Reading, opts ...Option) (metric.Registration, error) {
	if read == nil {
		return nil, fmt.Errorf("%w: nil read", ErrInvalidOption)
	}
	return observe(opts, attribute.String("component", name), [][3]string{
		{"cassdedup.clock.offset", "s", "The cluster's clock minus the component's, as last measured against a coordinator."},
		{"cassdedup.clock.offset.bound", "s", "How far the component's true offset from the cluster's clock may be from the one measured."},
		{"cassdedup.clock.measurement.age", "s", "Time since the component's last clock measurement that succeeded (-1: none yet)."},
	}, [][3]string{
		{"cassdedup.clock.measurements", "{measurement}", "Measurements of the component's clock against the cluster's."},
		{"cassdedup.clock.measurement.failures", "{measurement}", "Measurements of the component's clock that failed."},
		{"cassdedup.clock.refusals", "{call}", "Calls the component refused because its clock's offset was not known within their limit."},
	}, func() ([]float64, []int64) {
		r := read()
		age := -1.0
		if r.Measured {
			age = r.Age.Seconds()
		}
		return []float64{r.Offset.Seconds(), r.Bound.Seconds(), age}, []int64{r.Measurements, r.Failures, r.Refusals}
	})
}
