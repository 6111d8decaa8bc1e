package counters_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/counters"
	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestNilReceiverAndContextAreInvalidArguments calls every exported method of *Store on a nil
// receiver, and on a store with a nil context: each returns lwt.ErrInvalidArgument and none
// panics. The session was never connected, so a call that got as far as the driver would fail
// differently (or panic).
func TestNilReceiverAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	store, err := counters.New(&gocql.Session{})
	require.NoError(t, err)
	now := time.Now()
	calls := map[string]func(ctx context.Context, s *counters.Store) error{
		"Increment": func(ctx context.Context, s *counters.Store) error {
			_, err := s.Increment(ctx, counters.Op{Counter: "c", ID: "op-1", Delta: 1, Time: now})
			return err
		},
		"Value": func(ctx context.Context, s *counters.Store) error { _, err := s.Value(ctx, "c"); return err },
		"ListUnapplied": func(ctx context.Context, s *counters.Store) error {
			_, err := s.ListUnapplied(ctx, now.Add(-time.Hour), now, 10)
			return err
		},
		"Settle": func(ctx context.Context, s *counters.Store) error {
			_, err := s.Settle(ctx, "c", "op-1", true)
			return err
		},
		"Drift": func(ctx context.Context, s *counters.Store) error { _, err := s.Drift(ctx, "c"); return err },
	}
	argchecktest.Refused(t, lwt.ErrInvalidArgument, store, calls)
}
