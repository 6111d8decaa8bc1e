package otelobs

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// ObserveLog reports an events.Log's Stats, read at every collection, with the attribute
// store=name (the options WithMeterProvider; the others are ignored):
//
//	cassdedup.eventlog.rollup.lag {store}       gauge, s: how far behind the clock the rollup
//	                                            of the counter furthest behind is
//	                                            (LogStats.RollupLag)
//	cassdedup.eventlog.late {store}             counter: events recorded through the late path
//	cassdedup.eventlog.expired {store}          counter: retries refused as older than the
//	                                            retention (events.ErrEventExpired)
//	cassdedup.eventlog.rollup.failures {store}  counter: Rollup calls that failed
//	cassdedup.eventlog.rollup.stalls {store}    counter: rollups found past the maximum lag
//	                                            (events.ErrRollupStalled)
//
// Unregister the returned registration when the Log is no longer used. docs/operating.md lists
// the alerts to set on them.
func ObserveLog(name string, log *events.Log, opts ...Option) (metric.Registration, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: nil *events.Log", ErrInvalidOption)
	}
	s := settings{meters: otel.GetMeterProvider()}
	if err := optcheck.Apply(ErrInvalidOption, &s, opts); err != nil {
		return nil, err
	}
	meter := s.meters.Meter(ScopeName)
	lag, err := meter.Float64ObservableGauge("cassdedup.eventlog.rollup.lag", metric.WithUnit("s"),
		metric.WithDescription("How far behind the clock the rollup of the event log's counter furthest behind is."))
	if err != nil {
		return nil, err
	}
	counters, err := newInstruments(meter.Int64ObservableCounter, [][3]string{
		{"cassdedup.eventlog.late", "{event}", "Events recorded through the late path: their window had closed."},
		{"cassdedup.eventlog.expired", "{event}", "Events refused as older than the event log's retention."},
		{"cassdedup.eventlog.rollup.failures", "{rollup}", "Rollups of the event log that failed."},
		{"cassdedup.eventlog.rollup.stalls", "{rollup}", "Rollups found further behind than the maximum lag."},
	})
	if err != nil {
		return nil, err
	}
	store := metric.WithAttributes(attribute.String("store", name))
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := log.Stats()
		o.ObserveFloat64(lag, st.RollupLag.Seconds(), store)
		for i, v := range []int64{st.LateEvents, st.Expired, st.RollupFailures, st.Stalled} {
			o.ObserveInt64(counters[i], v, store)
		}
		return nil
	}, lag, counters[0], counters[1], counters[2], counters[3])
}
