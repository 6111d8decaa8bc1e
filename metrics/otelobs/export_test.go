package otelobs

import "time"

// ObserveRelayAt is ObserveRelay with the clock of a test.
func ObserveRelayAt(name string, now func() time.Time, opts ...Option) (*Relay, error) {
	return observeRelay(name, now, opts)
}
