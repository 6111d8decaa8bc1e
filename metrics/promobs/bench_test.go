package promobs_test

import (
	"testing"
	"time"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
)

// BenchmarkObserve measures what one observation costs the store that reports it.
func BenchmarkObserve(b *testing.B) {
	m, err := promobs.New()
	if err != nil {
		b.Fatal(err)
	}
	o := m.Observer("orders")
	for _, ob := range []lwt.Observation{
		{Kind: lwt.ObservedLWT, Op: "claim", Applied: true, Latency: 2 * time.Millisecond},
		{Kind: lwt.ObservedClaim},
	} {
		b.Run(ob.Kind.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o.Observe(ob)
			}
		})
	}
}
