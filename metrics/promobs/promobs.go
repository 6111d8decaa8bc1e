// Package promobs exports what cassdedup's stores do as Prometheus metrics: call [New], register
// the [Metrics] with Prometheus, and pass [Metrics.Observer](name) to a store's WithObserver
// option. It lives in a module of its own, so the library's importers do not get the Prometheus
// client unless they ask.
//
// A Metrics is one prometheus.Collector; Metrics.Observer gives each store (an lwt.Store, an
// events.Log or guard.Guard, a counters.Store) an lwt.Observer that labels its series with the
// store's name. The metrics, with the labels store, op, result and kind everywhere:
//
//	cassdedup_lwt_duration_seconds{store,op,result}     histogram of conditional writes and serial
//	                                                    reads; result applied, not_applied (a
//	                                                    condition that failed; a read that found no
//	                                                    row) or error
//	cassdedup_write_duration_seconds{store,op,result}   histogram of plain writes; result ok or error
//	cassdedup_observations_total{store,kind}            state transitions and outcomes: claim,
//	                                                    takeover, replay, cache-hit, conflict,
//	                                                    key-reuse, complete, fail, release,
//	                                                    lease-lost, outcome-unknown,
//	                                                    outcome-resolved, fast-path, unconfirmed,
//	                                                    superseded, no-lease, epoch-regressed
//
// The histograms' buckets run from 0.5 ms to 4 s in powers of two: an LWT takes about a
// millisecond on one loopback node, a few on a LAN, tens to hundreds across datacenters, and
// seconds when Paxos contends or a replica times out.
//
// Metrics and its observers are safe for concurrent use and start no goroutines.
package promobs

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/internal/optcheck"
	"github.com/cassdedup/cassdedup/lwt"
)

// ErrInvalidOption is returned by New for a nil option or one out of range.
var ErrInvalidOption = errors.New("promobs: invalid option")

// DefaultBuckets returns the latency histograms' upper bounds in seconds: 0.5 ms to 4.096 s in
// powers of two.
func DefaultBuckets() []float64 { return prometheus.ExponentialBuckets(0.0005, 2, 14) }

// Metrics collects the observations of every store it gave an Observer to.
type Metrics struct {
	lwt, writes  *prometheus.HistogramVec
	observations *prometheus.CounterVec
}

// Option configures New and every collector alike (WithConstLabels). A bad one makes the
// constructor fail with an error that names it.
type Option func(*settings) error

// MetricsOption is what New accepts: an Option or WithBuckets.
type MetricsOption interface{ metricsOption() Option }

// HistogramOption shapes the histograms of New's Metrics (WithBuckets): only New accepts it, and
// passing it to a collector, which has no histogram, does not compile.
type HistogramOption func(*settings) error

func (o Option) metricsOption() Option          { return o }
func (o HistogramOption) metricsOption() Option { return Option(o) }

type settings struct {
	buckets   []float64
	constants prometheus.Labels
}

// WithBuckets replaces DefaultBuckets(): increasing upper bounds in seconds.
func WithBuckets(bounds []float64) HistogramOption {
	increasing := len(bounds) > 0
	for i := 1; i < len(bounds); i++ {
		increasing = increasing && bounds[i] > bounds[i-1]
	}
	return HistogramOption(optcheck.Set(ErrInvalidOption, !increasing, optcheck.Call("WithBuckets", bounds), "bounds must be given and increase",
		func(s *settings) { s.buckets = append([]float64(nil), bounds...) }))
}

// WithConstLabels adds labels with fixed values to every series (for example the service).
func WithConstLabels(labels prometheus.Labels) Option {
	return func(s *settings) error {
		for k := range labels {
			switch k {
			case "store", "op", "result", "kind":
				return optcheck.Bad(ErrInvalidOption, optcheck.Call("WithConstLabels", labels), "%q is one of the metrics' own labels", k)
			}
		}
		s.constants = labels
		return nil
	}
}

// New returns the metrics; register them once (prometheus.MustRegister(m)) and hand
// m.Observer(name) to each store.
func New(opts ...MetricsOption) (*Metrics, error) {
	s := settings{buckets: DefaultBuckets()}
	if err := optcheck.Apply(ErrInvalidOption, &s, optcheck.Unwrap(opts, MetricsOption.metricsOption)); err != nil {
		return nil, err
	}
	return &Metrics{
		lwt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cassdedup_lwt_duration_seconds", ConstLabels: s.constants, Buckets: s.buckets,
			Help: "Latency of cassdedup's lightweight transactions (conditional writes) and serial reads.",
		}, []string{"store", "op", "result"}),
		writes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cassdedup_write_duration_seconds", ConstLabels: s.constants, Buckets: s.buckets,
			Help: "Latency of cassdedup's plain writes: fast-path records, events, counter increments.",
		}, []string{"store", "op", "result"}),
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cassdedup_observations_total", ConstLabels: s.constants,
			Help: "State transitions and outcomes of cassdedup's stores, by kind (lwt.ObservationKind).",
		}, []string{"store", "kind"}),
	}, nil
}

// Describe sends the metrics' descriptors.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.lwt.Describe(ch)
	m.writes.Describe(ch)
	m.observations.Describe(ch)
}

// Collect sends the metrics' current values.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.lwt.Collect(ch)
	m.writes.Collect(ch)
	m.observations.Collect(ch)
}

// Observer returns the observer for one store, whose series carry store=name.
func (m *Metrics) Observer(name string) lwt.Observer {
	return &observer{metrics: m, store: name}
}

type observer struct {
	metrics *Metrics
	store   string
}

// Observe records o.
func (o *observer) Observe(ob lwt.Observation) {
	switch ob.Kind {
	case lwt.ObservedLWT:
		result := ob.Result()
		o.metrics.lwt.WithLabelValues(o.store, ob.Op, result).Observe(ob.Latency.Seconds())
	case lwt.ObservedWrite:
		result := ob.Result()
		o.metrics.writes.WithLabelValues(o.store, ob.Op, result).Observe(ob.Latency.Seconds())
	default:
		o.metrics.observations.WithLabelValues(o.store, ob.Kind.String()).Inc()
	}
}
