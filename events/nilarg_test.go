package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestNilReceiverAndContextAreInvalidArguments calls every exported method of *Guard and *Log
// on a nil receiver, and on a guard or log with a nil context: each returns
// lwt.ErrInvalidArgument and none panics. The session was never connected, so a call that got
// as far as the driver would fail differently (or panic).
func TestNilReceiverAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	guard, err := events.NewGuard(&gocql.Session{})
	require.NoError(t, err)
	log, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
	scope := events.Scope{Group: "g", Topic: "t", Partition: 0}
	msg := events.Message{Scope: scope, ID: "m-1", Time: time.Now()}
	handler := func(context.Context, events.Message) error { return nil }
	guards := map[string]func(ctx context.Context, g *events.Guard) error{
		"Process": func(ctx context.Context, g *events.Guard) error { _, err := g.Process(ctx, msg, handler); return err },
		"ProcessBatch": func(ctx context.Context, g *events.Guard) error {
			_, err := g.ProcessBatch(ctx, []events.Message{msg}, handler)
			return err
		},
		"Own":     func(ctx context.Context, g *events.Guard) error { return g.Own(ctx, scope, 1, nil) },
		"Inspect": func(ctx context.Context, g *events.Guard) error { _, err := g.Inspect(ctx, scope, "m-1"); return err },
		"ReleaseMessage": func(ctx context.Context, g *events.Guard) error {
			_, err := g.ReleaseMessage(ctx, scope, "m-1")
			return err
		},
		"DeleteMessage": func(ctx context.Context, g *events.Guard) error {
			_, err := g.DeleteMessage(ctx, scope, "m-1")
			return err
		},
		"ScanStuck": func(ctx context.Context, g *events.Guard) error {
			_, err := g.ScanStuck(ctx, lwt.StuckOptions{}, func(lwt.StuckClaim) error { return nil })
			return err
		},
		"ListMessages": func(ctx context.Context, g *events.Guard) error {
			return g.ListMessages(ctx, scope, time.Now().Add(-time.Hour), func(events.MessageRecord) error { return nil })
		},
		"ProcessedIDs": func(ctx context.Context, g *events.Guard) error {
			return g.ProcessedIDs(ctx, scope, func(string) error { return nil })
		},
	}
	argchecktest.Refused(t, lwt.ErrInvalidArgument, guard, guards)
	var nilGuard *events.Guard
	assert.Zero(t, nilGuard.Stats())
	assert.Zero(t, nilGuard.BatchStats())
	assert.NotPanics(t, func() { nilGuard.Disown(scope) })

	event := events.Event{Counter: "c", ID: "e-1", Delta: 1, Time: time.Now()}
	logs := map[string]func(ctx context.Context, l *events.Log) error{
		"Record": func(ctx context.Context, l *events.Log) error { return l.Record(ctx, event) },
		"Rollup": func(ctx context.Context, l *events.Log) error { _, err := l.Rollup(ctx, "c"); return err },
		"RollupEvery": func(ctx context.Context, l *events.Log) error {
			return l.RollupEvery(ctx, time.Minute, nil, "c")
		},
		"Total": func(ctx context.Context, l *events.Log) error { _, err := l.Total(ctx, "c"); return err },
	}
	argchecktest.Refused(t, lwt.ErrInvalidArgument, log, logs)
}
