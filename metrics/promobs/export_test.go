package promobs

import "time"

// NewRelayCollectorAt is NewRelayCollector with the clock of a test.
func NewRelayCollectorAt(name string, now func() time.Time, opts ...Option) (*RelayCollector, error) {
	return newRelayCollector(name, now, opts)
}
