package otelobs

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cassdedup/cassdedup/events"
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
	return observe(opts, attribute.String("store", name), [][3]string{
		{"cassdedup.eventlog.rollup.lag", "s", "How far behind the clock the rollup of the event log's counter furthest behind is."},
	}, [][3]string{
		{"cassdedup.eventlog.late", "{event}", "Events recorded through the late path: their window had closed."},
		{"cassdedup.eventlog.expired", "{event}", "Events refused as older than the event log's retention."},
		{"cassdedup.eventlog.rollup.failures", "{rollup}", "Rollups of the event log that failed."},
		{"cassdedup.eventlog.rollup.stalls", "{rollup}", "Rollups found further behind than the maximum lag."},
	}, func() ([]float64, []int64) {
		st := log.Stats()
		return []float64{st.RollupLag.Seconds()}, []int64{st.LateEvents, st.Expired, st.RollupFailures, st.Stalled}
	})
}
