package promobs_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt/clock"
	"github.com/cassdedup/cassdedup/metrics/promobs"
)

// TestClockCollectorExportsTheReading scrapes a component's clock reading (what outbox's Clock
// methods return), and a reading never measured shows an age of -1.
func TestClockCollectorExportsTheReading(t *testing.T) {
	t.Parallel()
	r := clock.Reading{Offset: 150 * time.Second, Bound: 2 * time.Millisecond, Age: 30 * time.Second, Measured: true,
		Measurements: 4, Failures: 1, Refusals: 3}
	c, err := promobs.NewClockCollector("orders-stager", func() clock.Reading { return r })
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	want := map[string]float64{
		"cassdedup_clock_offset_seconds":             150,
		"cassdedup_clock_offset_bound_seconds":       0.002,
		"cassdedup_clock_measurement_age_seconds":    30,
		"cassdedup_clock_measurements_total":         4,
		"cassdedup_clock_measurement_failures_total": 1,
		"cassdedup_clock_refusals_total":             3,
	}
	check := func() {
		got := scrape(t, reg)
		for name, v := range want {
			f := got[name]
			require.NotNil(t, f, name)
			require.Len(t, f.Metric, 1, name)
			m := f.Metric[0]
			val := m.GetCounter().GetValue()
			if m.GetGauge() != nil {
				val = m.GetGauge().GetValue()
			}
			assert.InDelta(t, v, val, 1e-9, name)
			assert.Equal(t, "component", m.Label[0].GetName())
			assert.Equal(t, "orders-stager", m.Label[0].GetValue())
		}
	}
	check()
	r = clock.Reading{Measurements: 1, Failures: 1}
	want = map[string]float64{"cassdedup_clock_measurement_age_seconds": -1, "cassdedup_clock_measurement_failures_total": 1}
	check()

	_, err = promobs.NewClockCollector("x", nil)
	require.ErrorIs(t, err, promobs.ErrInvalidOption)
}
