package promobs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/events"
)

// LogCollector exports an events.Log's Stats at every scrape, labelled store=name:
//
//	cassdedup_eventlog_rollup_lag_seconds{store}          gauge: how far behind the clock the
//	                                                      rollup of the counter furthest behind
//	                                                      is (LogStats.RollupLag); about
//	                                                      Log.Lag(interval) while rollups run
//	cassdedup_eventlog_late_records_total{store}          counter: Record calls that took the
//	                                                      late path (rate: writers behind)
//	cassdedup_eventlog_expired_records_total{store}       counter: retries refused as older than
//	                                                      the retention (events.ErrEventExpired)
//	cassdedup_eventlog_rollup_failures_total{store}       counter: Rollup calls that failed
//	cassdedup_eventlog_rollup_stalls_total{store}         counter: rollups found past the maximum
//	                                                      lag (events.ErrRollupStalled)
//
// docs/operating.md lists the alerts to set on them. It is safe for concurrent use; register it
// once per Log, beside the Metrics.
type LogCollector struct {
	log                                  *events.Log
	lag, late, expired, failures, stalls *prometheus.Desc
}

// NewLogCollector returns the collector of log, whose series carry store=name and the constant
// labels given (WithConstLabels; other options are refused: they shape the histograms of New).
func NewLogCollector(name string, log *events.Log, opts ...Option) (*LogCollector, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: nil *events.Log", ErrInvalidOption)
	}
	desc, err := collectorDesc("LogCollector", "store", name, opts)
	if err != nil {
		return nil, err
	}
	return &LogCollector{
		log: log,
		lag: desc("cassdedup_eventlog_rollup_lag_seconds",
			"How far behind the clock the rollup of the event log's counter furthest behind is."),
		late: desc("cassdedup_eventlog_late_records_total",
			"Events recorded through the late path: their window had closed (writers behind their events)."),
		expired: desc("cassdedup_eventlog_expired_records_total",
			"Events refused as older than the event log's retention (events.ErrEventExpired)."),
		failures: desc("cassdedup_eventlog_rollup_failures_total", "Rollups of the event log that failed."),
		stalls: desc("cassdedup_eventlog_rollup_stalls_total",
			"Rollups found further behind than the maximum lag (events.ErrRollupStalled)."),
	}, nil
}

// Describe sends the descriptors.
func (c *LogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.late, c.expired, c.failures, c.stalls} {
		ch <- d
	}
}

// Collect reads the Log's Stats and sends their values.
func (c *LogCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.log.Stats()
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.RollupLag.Seconds())
	ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(s.LateEvents))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(s.Expired))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(s.RollupFailures))
	ch <- prometheus.MustNewConstMetric(c.stalls, prometheus.CounterValue, float64(s.Stalled))
}
