package promobs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/lwt/clock"
)

// ClockCollector exports what a component knows of its clock (a clock.Reading: the Clock method
// of outbox.Outbox, outbox.Relay, events.Log or guard.Guard) at every scrape, labelled
// component=name:
//
//	cassdedup_clock_offset_seconds{component}              gauge: the cluster's clock minus the
//	                                                       component's (Reading.Offset)
//	cassdedup_clock_offset_bound_seconds{component}        gauge: how far the true offset may be
//	                                                       from it (Reading.Bound)
//	cassdedup_clock_measurement_age_seconds{component}     gauge: since the last measurement
//	                                                       that succeeded (-1: none yet)
//	cassdedup_clock_measurements_total{component}          counter: measurements made
//	cassdedup_clock_measurement_failures_total{component}  counter: of them, failed
//	cassdedup_clock_refusals_total{component}              counter: calls refused because the
//	                                                       offset was not known within their
//	                                                       limit (clock.ErrOffset)
//
// docs/operating.md lists the alerts to set on them. It is safe for concurrent use; register it
// once per component.
type ClockCollector struct {
	read                                     func() clock.Reading
	offset, bound, age, total, fails, refuse *prometheus.Desc
}

// NewClockCollector returns the collector of the clock that read reports (box.Clock,
// relay.Clock, log.Clock, g.Clock), whose series carry component=name and the constant labels given
// (WithConstLabels; other options are refused: they shape the histograms of New).
func NewClockCollector(name string, read func() clock.Reading, opts ...Option) (*ClockCollector, error) {
	if read == nil {
		return nil, fmt.Errorf("%w: nil read", ErrInvalidOption)
	}
	desc, err := collectorDesc("ClockCollector", "component", name, opts)
	if err != nil {
		return nil, err
	}
	return &ClockCollector{read: read,
		offset: desc("cassdedup_clock_offset_seconds", "The cluster's clock minus the component's, as last measured against a coordinator."),
		bound:  desc("cassdedup_clock_offset_bound_seconds", "How far the component's true offset from the cluster's clock may be from the one measured."),
		age:    desc("cassdedup_clock_measurement_age_seconds", "Time since the component's last clock measurement that succeeded (-1: none yet)."),
		total:  desc("cassdedup_clock_measurements_total", "Measurements of the component's clock against the cluster's."),
		fails:  desc("cassdedup_clock_measurement_failures_total", "Measurements of the component's clock that failed."),
		refuse: desc("cassdedup_clock_refusals_total", "Calls the component refused because its clock's offset was not known within their limit."),
	}, nil
}

// Describe sends the descriptors.
func (c *ClockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.offset, c.bound, c.age, c.total, c.fails, c.refuse} {
		ch <- d
	}
}

// Collect reads the component's clock and sends its values.
func (c *ClockCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.read()
	age := -1.0
	if r.Measured {
		age = r.Age.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(c.offset, prometheus.GaugeValue, r.Offset.Seconds())
	ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, r.Bound.Seconds())
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.CounterValue, float64(r.Measurements))
	ch <- prometheus.MustNewConstMetric(c.fails, prometheus.CounterValue, float64(r.Failures))
	ch <- prometheus.MustNewConstMetric(c.refuse, prometheus.CounterValue, float64(r.Refusals))
}
