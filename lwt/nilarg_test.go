package lwt_test

import (
	"context"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/argcheck/argchecktest"
	"github.com/cassdedup/cassdedup/lwt"
)

// TestNilReceiverAndContextAreInvalidArguments calls every exported method of *Store and
// *BatchStore on a nil receiver, and on a store with a nil context: each returns
// ErrInvalidArgument and none panics. The store's session was never connected, so any call
// that got as far as the driver would fail differently (or panic).
func TestNilReceiverAndContextAreInvalidArguments(t *testing.T) {
	t.Parallel()
	store, err := lwt.NewStore(&gocql.Session{}, lwt.IdempotencyKeys("ks"))
	require.NoError(t, err)
	batch, err := lwt.NewBatchStore(&gocql.Session{}, lwt.BatchTable{Keyspace: "ks", Name: "t",
		PartitionColumns: []string{"p"}, KeyColumn: "k"})
	require.NoError(t, err)
	key := lwt.IdempotencyKey("ns", "order-1")
	claim := &lwt.Claim{Key: key, Owner: gocql.TimeUUID(), Fence: 1}
	fn := func(context.Context) ([]byte, error) { return []byte("r"), nil }
	stores := map[string]func(ctx context.Context, s *lwt.Store) error{
		"ExecuteOnce": func(ctx context.Context, s *lwt.Store) error { _, err := s.ExecuteOnce(ctx, key, fn); return err },
		"Begin":       func(ctx context.Context, s *lwt.Store) error { _, _, err := s.Begin(ctx, key, nil); return err },
		"Renew":       func(ctx context.Context, s *lwt.Store) error { return s.Renew(ctx, claim) },
		"Complete":    func(ctx context.Context, s *lwt.Store) error { return s.Complete(ctx, claim, nil) },
		"Fail":        func(ctx context.Context, s *lwt.Store) error { return s.Fail(ctx, claim, nil) },
		"Release":     func(ctx context.Context, s *lwt.Store) error { return s.Release(ctx, claim, nil) },
		"Get":         func(ctx context.Context, s *lwt.Store) error { _, err := s.Get(ctx, key); return err },
		"Inspect":     func(ctx context.Context, s *lwt.Store) error { _, err := s.Inspect(ctx, key); return err },
		"ReleaseKey":  func(ctx context.Context, s *lwt.Store) error { _, err := s.ReleaseKey(ctx, key); return err },
		"Delete":      func(ctx context.Context, s *lwt.Store) error { _, err := s.Delete(ctx, key); return err },
		"PutCompleted": func(ctx context.Context, s *lwt.Store) error {
			_, err := s.PutCompleted(ctx, key, nil, []byte("r"), 0)
			return err
		},
		"PutCompletedIfNotExists": func(ctx context.Context, s *lwt.Store) error {
			_, _, err := s.PutCompletedIfNotExists(ctx, key, nil, []byte("r"), 0)
			return err
		},
		"Scan": func(ctx context.Context, s *lwt.Store) error {
			_, err := s.Scan(ctx, lwt.ScanOptions{}, func(lwt.Key, *lwt.Record) error { return nil })
			return err
		},
		"ScanStuck": func(ctx context.Context, s *lwt.Store) error {
			_, err := s.ScanStuck(ctx, lwt.StuckOptions{}, func(lwt.StuckClaim) error { return nil })
			return err
		},
		"Own": func(ctx context.Context, s *lwt.Store) error { return s.Own(ctx, key, 1, nil, nil) },
		"Execute": func(ctx context.Context, s *lwt.Store) error {
			_, _, err := lwt.Execute(ctx, s, key, lwt.JSON[int]{}, func(context.Context) (int, error) { return 1, nil })
			return err
		},
	}
	argchecktest.Refused(t, lwt.ErrInvalidArgument, store, stores)
	_, err = store.ExecuteOnce(context.Background(), key, fn, nil)
	assert.ErrorIs(t, err, lwt.ErrInvalidArgument, "a nil CallOption")
	var nilStore *lwt.Store
	assert.Zero(t, nilStore.Stats())
	assert.NotPanics(t, func() { nilStore.Disown(key) })

	partition := lwt.IdempotencyKey("ns", "p")
	batches := map[string]func(ctx context.Context, s *lwt.BatchStore) []error{
		"BeginBatch": func(ctx context.Context, s *lwt.BatchStore) []error {
			_, err := s.BeginBatch(ctx, partition, []lwt.BatchItem{{Key: "a"}})
			return []error{err}
		},
		"FinishBatch": func(ctx context.Context, s *lwt.BatchStore) []error {
			return s.FinishBatch(ctx, []lwt.BatchEnd{{Claim: claim, Status: lwt.StatusCompleted}, {Claim: claim, Status: lwt.StatusReleased}})
		},
		"RenewBatch": func(ctx context.Context, s *lwt.BatchStore) []error {
			return s.RenewBatch(ctx, []*lwt.Claim{claim, claim})
		},
	}
	for name, call := range batches {
		for what, errs := range map[string][]error{
			"nil *BatchStore": call(context.Background(), nil),
			"nil context":     call(nil, batch), //nolint:staticcheck // on purpose
		} {
			require.NotEmpty(t, errs, "%s: %s", what, name)
			for _, err := range errs {
				assert.ErrorIs(t, err, lwt.ErrInvalidArgument, "%s: %s", what, name)
			}
		}
	}
	var nilBatch *lwt.BatchStore
	assert.Zero(t, nilBatch.Stats())
}
