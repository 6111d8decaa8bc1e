package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/events"
	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestNilReceiverAndContextAreInvalidArguments calls every exported method of *Log on a nil
// receiver, and on a log with a nil context: each returns
// lwt.ErrInvalidArgument and none panics. The session was never connected, so a call that got
// as far as the driver would fail differently (or panic).
func TestNilReceiverAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	log, err := events.NewLog(&gocql.Session{})
	require.NoError(t, err)
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
