package promobs_test

import (
	"log"
	"net/http"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
)

// One collector for the process; one observer per store, named after it.
func ExampleMetrics_Observer() {
	var session *gocql.Session // your session
	metrics, err := promobs.New()
	if err != nil {
		log.Fatal(err)
	}
	prometheus.MustRegister(metrics)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithObserver(metrics.Observer("payments")))
	if err != nil {
		log.Fatal(err)
	}
	g, err := guard.New(session, guard.WithObserver(metrics.Observer("invoice-consumer")))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = store, g
	http.Handle("/metrics", promhttp.Handler())
}
