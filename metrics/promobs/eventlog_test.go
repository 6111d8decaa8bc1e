package promobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/metrics/promobs"
)

// TestLogCollectorExportsTheEventLog scrapes a Log's lag and counters. The session is never
// connected: an event older than the retention is refused before any I/O, and counted.
func TestLogCollectorExportsTheEventLog(t *testing.T) {
	t.Parallel()
	log, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	err = log.Record(context.Background(), events.Event{Counter: "c", ID: "old", Delta: 1, Time: time.Now().Add(-8 * 24 * time.Hour)})
	require.ErrorIs(t, err, events.ErrEventExpired)
	c, err := promobs.NewLogCollector("orders", log, promobs.WithConstLabels(prometheus.Labels{"service": "shop"}))
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	got := scrape(t, reg)
	for name, want := range map[string]float64{
		"cassdedup_eventlog_rollup_lag_seconds":    0,
		"cassdedup_eventlog_late_records_total":    0,
		"cassdedup_eventlog_expired_records_total": 1,
		"cassdedup_eventlog_rollup_failures_total": 0,
		"cassdedup_eventlog_rollup_stalls_total":   0,
	} {
		f := got[name]
		require.NotNil(t, f, name)
		require.Len(t, f.Metric, 1, name)
		m := f.Metric[0]
		v := m.GetCounter().GetValue()
		if m.GetGauge() != nil {
			v = m.GetGauge().GetValue()
		}
		assert.Equal(t, want, v, name)
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, map[string]string{"store": "orders", "service": "shop"}, labels, name)
	}
}

func TestLogCollectorRefusesBadArguments(t *testing.T) {
	t.Parallel()
	_, err := promobs.NewLogCollector("orders", nil)
	require.ErrorIs(t, err, promobs.ErrInvalidOption)
	log, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	_, err = promobs.NewLogCollector("orders", log, nil)
	require.ErrorIs(t, err, promobs.ErrInvalidOption)
}
