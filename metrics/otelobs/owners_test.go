package otelobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/otelobs"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestEpochRegressedCounted: an Own whose epoch went back (lwt.ErrEpochRegressed) is counted
// as the kind epoch-regressed, so an alert can fire on the scope that nothing can own.
func TestEpochRegressedCounted(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelobs.New("orders", otelobs.WithMeterProvider(mp))
	require.NoError(t, err)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(obs))
	require.NoError(t, err)
	ctx := context.Background()
	pre := &warmOnly{}
	none := func(context.Context, func(string, time.Time) error) error { return nil }
	require.NoError(t, store.Own(ctx, lwt.Key{"t"}, 9, pre, none))
	store.Disown(lwt.Key{"t"})
	require.ErrorIs(t, store.Own(ctx, lwt.Key{"t"}, 3, pre, none), lwt.ErrEpochRegressed)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	observed := map[string]int64{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if data, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range data.DataPoints {
				observed[attr(dp.Attributes, "store")+"/"+attr(dp.Attributes, "kind")] = dp.Value
			}
		}
	}
	assert.Equal(t, map[string]int64{"orders/epoch-regressed": 1}, observed)
}

// warmOnly is the least lwt.PreCheck Own accepts: warm once warmed, never vouching for a key.
// (The ownership it is owned with is what the test is about, not the pre-check.)
type warmOnly struct{ epoch atomic.Uint64 }

func (p *warmOnly) Admit(string) (bool, bool, uint64) { return false, false, 0 }
func (p *warmOnly) ObserveMaybeSeen(bool)             {}
func (p *warmOnly) Owns(epoch uint64) bool            { return p.epoch.Load() == epoch }
func (p *warmOnly) Invalidate()                       { p.epoch.Store(0) }
func (p *warmOnly) Retention() time.Duration          { return 2 * lwt.DefaultRetention }
func (p *warmOnly) WarmUp(ctx context.Context, epoch uint64, keys lwt.KeySource) error {
	if err := keys(ctx, func(string, time.Time) error { return nil }); err != nil {
		return err
	}
	p.epoch.Store(epoch)
	return nil
}
