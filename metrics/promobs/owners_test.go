package promobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/metrics/promobs"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestEpochRegressedExported: an Own whose epoch went back (lwt.ErrEpochRegressed) is exported
// as cassdedup_observations_total{kind="epoch-regressed"}, so an alert can fire on the scope
// that nothing can own.
func TestEpochRegressedExported(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	m, err := promobs.New()
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks), lwt.WithObserver(m.Observer("orders")))
	require.NoError(t, err)
	ctx := context.Background()
	pre := &warmOnly{}
	none := func(context.Context, func(string, time.Time) error) error { return nil }
	require.NoError(t, store.Own(ctx, lwt.Key{"t"}, 9, pre, none))
	store.Disown(lwt.Key{"t"})
	require.ErrorIs(t, store.Own(ctx, lwt.Key{"t"}, 3, pre, none), lwt.ErrEpochRegressed)

	obs := series(scrape(t, reg)["cassdedup_observations_total"])
	require.Contains(t, obs, "orders/epoch-regressed")
	assert.Equal(t, 1.0, obs["orders/epoch-regressed"].GetCounter().GetValue())
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
