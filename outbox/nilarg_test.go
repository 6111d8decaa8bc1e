package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
)

// TestNilReceiverAndContextAreInvalid calls every exported method of *Outbox, *Relay and
// *Admin that takes a context on a nil receiver, and on a valid one with a nil context: each
// returns ErrInvalidOption and none panics. The session was never connected, so a call that got
// as far as the driver would fail differently (or panic).
func TestNilReceiverAndContextAreInvalid(t *testing.T) {
	t.Parallel()
	session := &gocql.Session{}
	box, err := New(session)
	require.NoError(t, err)
	argchecktest.Refused(t, ErrInvalidOption, box, map[string]func(context.Context, *Outbox) error{
		"Stage": func(ctx context.Context, o *Outbox) error { return o.Stage(ctx, Event{Type: "x"}) },
	})
	relay, err := NewRelay(session, &recorder{})
	require.NoError(t, err)
	argchecktest.Refused(t, ErrInvalidOption, relay, map[string]func(context.Context, *Relay) error{
		"Poll": func(ctx context.Context, r *Relay) error { _, err := r.Poll(ctx); return err },
		"Run":  func(ctx context.Context, r *Relay) error { return r.Run(ctx, nil) },
	})
	var nilRelay *Relay
	assert.NotPanics(t, func() { nilRelay.Release(context.Background()) })
	assert.Empty(t, nilRelay.Held())
	admin, err := NewAdmin(session)
	require.NoError(t, err)
	none := func(Pending) error { return nil }
	argchecktest.Refused(t, ErrInvalidOption, admin, map[string]func(context.Context, *Admin) error{
		"Cursors":     func(ctx context.Context, a *Admin) error { _, err := a.Cursors(ctx); return err },
		"Layout":      func(ctx context.Context, a *Admin) error { _, err := a.Layout(ctx); return err },
		"ListPending": func(ctx context.Context, a *Admin) error { return a.ListPending(ctx, time.Now(), none) },
		"ListParked":  func(ctx context.Context, a *Admin) error { return a.ListParked(ctx, func(Parked) error { return nil }) },
		"Replay":      func(ctx context.Context, a *Admin) error { _, err := a.Replay(ctx, "ns", "k", true); return err },
		"Unpark":      func(ctx context.Context, a *Admin) error { _, err := a.Unpark(ctx, "ns", "k", true); return err },
		"Discard":     func(ctx context.Context, a *Admin) error { _, err := a.Discard(ctx, "ns", "k", true); return err },
	})
}
