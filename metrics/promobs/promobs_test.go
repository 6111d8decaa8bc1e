package promobs_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
	"github.com/cassdedup/cassdedup/testnode"
)

// scrape fetches the registry's exposition over HTTP, as Prometheus would, and parses it with
// Prometheus's own text-format parser.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	// Legacy validation: the names must also be valid for Prometheus servers before 3.0.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// series indexes a family's series by their labels (store, op, result, kind), in that order.
func series(f *dto.MetricFamily) map[string]*dto.Metric {
	out := map[string]*dto.Metric{}
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var parts []string
		for _, name := range []string{"store", "op", "result", "kind"} {
			for _, l := range m.Label {
				if l.GetName() == name {
					parts = append(parts, l.GetValue())
				}
			}
		}
		out[strings.Join(parts, "/")] = m
	}
	return out
}

// TestCollectorAfterAKnownSequence runs a known sequence of operations on each kind of store
// and checks the exact counts the collector exposes.
func TestCollectorAfterAKnownSequence(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	m, err := promobs.New(promobs.WithConstLabels(prometheus.Labels{"service": "checkout"}))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	ctx := context.Background()

	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(m.Observer("orders")))
	require.NoError(t, err)
	ok := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
	_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("t", "k1"), ok) // claim, complete
	require.NoError(t, err)
	_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("t", "k1"), ok) // rejected claim, replay
	require.NoError(t, err)
	failing := errors.New("downstream 503")
	_, err = store.ExecuteOnce(ctx, lwt.IdempotencyKey("t", "k2"), func(context.Context) ([]byte, error) { return nil, failing })
	require.ErrorIs(t, err, failing) // claim, release

	g, err := guard.New(session, guard.WithKeyspace(ks), guard.WithObserver(m.Observer("consumer")))
	require.NoError(t, err)
	msg := guard.Message{Scope: guard.Scope{Group: "g", Topic: "t"}, ID: "m1"}
	for range 2 { // processed, then a duplicate
		_, err = g.Process(ctx, msg, func(context.Context, guard.Message) error { return nil })
		require.NoError(t, err)
	}
	log, err := events.NewLog(session, events.WithKeyspace(ks), events.WithObserver(m.Observer("pageviews")))
	require.NoError(t, err)
	for range 3 { // one event recorded three times: three plain writes
		require.NoError(t, log.Record(ctx, events.Event{Counter: "views", ID: "e1", Delta: 1, Time: time.Now()}))
	}
	cs, err := counters.New(session, counters.WithKeyspace(ks), counters.WithObserver(m.Observer("likes")))
	require.NoError(t, err)
	for range 2 { // applied (claim, increment, mark), then a duplicate (rejected claim)
		_, err = cs.Increment(ctx, counters.Op{Counter: "c", ID: "op", Delta: 1})
		require.NoError(t, err)
	}

	families := scrape(t, reg)
	lwts := series(families["cassdedup_lwt_duration_seconds"])
	counts := map[string]uint64{}
	for k, s := range lwts {
		counts[k] = s.GetHistogram().GetSampleCount()
		buckets := s.GetHistogram().GetBucket()
		require.Len(t, buckets, len(promobs.DefaultBuckets())+1, "the buckets and +Inf: %s", k)
		assert.Equal(t, s.GetHistogram().GetSampleCount(), buckets[len(buckets)-1].GetCumulativeCount(), k)
		assert.Greater(t, s.GetHistogram().GetSampleSum(), 0.0, k)
	}
	assert.Equal(t, map[string]uint64{
		"orders/claim/applied": 2, "orders/claim/not_applied": 1, "orders/complete/applied": 1, "orders/release/applied": 1,
		"consumer/claim/applied": 1, "consumer/claim/not_applied": 1, "consumer/complete/applied": 1,
		"likes/claim/applied": 1, "likes/claim/not_applied": 1, "likes/mark/applied": 1,
	}, counts)

	writes := map[string]uint64{}
	for k, s := range series(families["cassdedup_write_duration_seconds"]) {
		writes[k] = s.GetHistogram().GetSampleCount()
	}
	assert.Equal(t, map[string]uint64{"pageviews/record/ok": 3, "likes/increment/ok": 1}, writes)

	observed := map[string]float64{}
	for k, s := range series(families["cassdedup_observations_total"]) {
		observed[k] = s.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{
		"orders/claim": 2, "orders/complete": 1, "orders/replay": 1, "orders/release": 1,
		"consumer/claim": 1, "consumer/complete": 1, "consumer/replay": 1,
	}, observed)

	for _, f := range families {
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			assert.Equal(t, "checkout", labels["service"], "the constant label: %s", f.GetName())
		}
	}
	assert.Equal(t, dto.MetricType_COUNTER, families["cassdedup_observations_total"].GetType())
	assert.Equal(t, dto.MetricType_HISTOGRAM, families["cassdedup_lwt_duration_seconds"].GetType())
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []promobs.MetricsOption{
		nil, promobs.WithBuckets(nil), promobs.WithBuckets([]float64{1, 1}),
		promobs.WithConstLabels(prometheus.Labels{"store": "x"}),
	} {
		_, err := promobs.New(o)
		assert.ErrorIs(t, err, promobs.ErrInvalidOption)
	}
	m, err := promobs.New(promobs.WithBuckets([]float64{0.001, 0.01}))
	require.NoError(t, err)
	m.Observer("s").Observe(lwt.Observation{Kind: lwt.ObservedLWT, Op: "claim", Err: errors.New("timeout"), Latency: 5 * time.Millisecond})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	got := series(scrape(t, reg)["cassdedup_lwt_duration_seconds"])
	require.Contains(t, got, "s/claim/error")
	assert.Len(t, got["s/claim/error"].GetHistogram().GetBucket(), 3, "two buckets and +Inf")
}
