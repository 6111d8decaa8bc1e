package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestNilReceiverAndContextAreInvalidArguments calls every exported method of *Guard on a nil
// receiver, and on a guard with a nil context: each returns
// lwt.ErrInvalidArgument and none panics. The session was never connected, so a call that got
// as far as the driver would fail differently (or panic).
func TestNilReceiverAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	g, err := guard.New(&gocql.Session{})
	require.NoError(t, err)
	scope := guard.Scope{Group: "g", Topic: "t", Partition: 0}
	msg := guard.Message{Scope: scope, ID: "m-1", Time: time.Now()}
	handler := func(context.Context, guard.Message) error { return nil }
	guards := map[string]func(ctx context.Context, g *guard.Guard) error{
		"Process": func(ctx context.Context, g *guard.Guard) error { _, err := g.Process(ctx, msg, handler); return err },
		"ProcessBatch": func(ctx context.Context, g *guard.Guard) error {
			_, err := g.ProcessBatch(ctx, []guard.Message{msg}, handler)
			return err
		},
		"Own":     func(ctx context.Context, g *guard.Guard) error { return g.Own(ctx, scope, 1, nil) },
		"Inspect": func(ctx context.Context, g *guard.Guard) error { _, err := g.Inspect(ctx, scope, "m-1"); return err },
		"ReleaseMessage": func(ctx context.Context, g *guard.Guard) error {
			_, err := g.ReleaseMessage(ctx, scope, "m-1")
			return err
		},
		"DeleteMessage": func(ctx context.Context, g *guard.Guard) error {
			_, err := g.DeleteMessage(ctx, scope, "m-1")
			return err
		},
		"ScanStuck": func(ctx context.Context, g *guard.Guard) error {
			_, err := g.ScanStuck(ctx, lwt.StuckOptions{}, func(lwt.StuckClaim) error { return nil })
			return err
		},
		"ListMessages": func(ctx context.Context, g *guard.Guard) error {
			return g.ListMessages(ctx, scope, time.Now().Add(-time.Hour), func(guard.MessageRecord) error { return nil })
		},
		"ProcessedIDs": func(ctx context.Context, g *guard.Guard) error {
			return g.ProcessedIDs(ctx, scope, func(string) error { return nil })
		},
	}
	argchecktest.Refused(t, lwt.ErrInvalidArgument, g, guards)
	var nilGuard *guard.Guard
	assert.Zero(t, nilGuard.Stats())
	assert.Zero(t, nilGuard.BatchStats())
	assert.NotPanics(t, func() { nilGuard.Disown(scope) })
}
