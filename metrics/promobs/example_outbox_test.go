package promobs_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/metrics/promobs"
	"github.com/cassdedup/cassdedup/outbox"
)

// A relay's passes become the outbox's series: hand OnPass to Relay.Run.
func ExampleNewRelayCollector() {
	relayMetrics, err := promobs.NewRelayCollector("orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(relayMetrics)
	// relay.Run(ctx, relayMetrics.OnPass) reports every pass; here one is reported by hand.
	relayMetrics.OnPass(outbox.Stats{Shards: 16, Published: 42, Waiting: 3}, nil)
	families, err := registry.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range families {
		switch f.GetName() {
		case "cassdedup_outbox_published_total":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
		case "cassdedup_outbox_pending_intents", "cassdedup_outbox_leases_held":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output:
	// cassdedup_outbox_leases_held 16
	// cassdedup_outbox_pending_intents 3
	// cassdedup_outbox_published_total 42
}
