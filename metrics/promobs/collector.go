package promobs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/internal/optcheck"
)

// collectorDesc reads the options of a collector, which only add constant labels, and
// returns how to describe its metrics: with label (the collector's own, "store" or "relay") set
// to name, and the constant labels. kind names the collector in errors.
func collectorDesc(kind, label, name string, opts []Option) (func(metric, help string) *prometheus.Desc, error) {
	var s settings
	if err := optcheck.Apply(ErrInvalidOption, &s, opts); err != nil {
		return nil, err
	}
	labels := prometheus.Labels{label: name}
	for k, v := range s.constants {
		if k == label {
			return nil, fmt.Errorf("%w: WithConstLabels: %q is the %s's own label", ErrInvalidOption, label, kind)
		}
		labels[k] = v
	}
	return func(metric, help string) *prometheus.Desc { return prometheus.NewDesc(metric, help, nil, labels) }, nil
}
