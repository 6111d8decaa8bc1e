package promobs_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
)

// What a store reports through its observer becomes series labelled with the store's name.
func ExampleNew() {
	metrics, err := promobs.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)
	// A store calls its observer; here one applied claim and one replay are reported by hand.
	observer := metrics.Observer("payments")
	observer.Observe(lwt.Observation{Kind: lwt.ObservedLWT, Op: "claim", Applied: true, Latency: 3 * time.Millisecond})
	observer.Observe(lwt.Observation{Kind: lwt.ObservedReplay})
	families, err := registry.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			fmt.Println(f.GetName(), strings.Join(labels, " "))
		}
	}
	// Output:
	// cassdedup_lwt_duration_seconds op=claim result=applied store=payments
	// cassdedup_observations_total kind=replay store=payments
}
