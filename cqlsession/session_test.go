package cqlsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// TestSessionRunsLWTs: a session from the recommended configuration, against the real node,
// claims a key with a conditional write and answers the duplicate from the stored record.
func TestSessionRunsLWTs(t *testing.T) {
	_, ks := testnode.NewSession(t) // a fresh keyspace with the schema
	session := testnode.RecommendedSession(t, ks)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A conditional write at the session's own serial consistency, as a user's query sends it.
	insert := `INSERT INTO idempotency_keys (namespace, key, status) VALUES (?, ?, 'STARTED') IF NOT EXISTS`
	for i, want := range []bool{true, false} {
		existing := map[string]any{}
		applied, err := session.Query(insert, "ns", "k").WithContext(ctx).MapScanCAS(existing)
		require.NoError(t, err)
		assert.Equal(t, want, applied, "attempt %d", i)
		if !applied {
			assert.Equal(t, "STARTED", existing["status"])
		}
	}

	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks))
	require.NoError(t, err)
	runs := 0
	for range 2 {
		res, err := store.ExecuteOnce(ctx, lwt.IdempotencyKey("ns", "once"), func(context.Context) ([]byte, error) {
			runs++
			return []byte("done"), nil
		})
		require.NoError(t, err)
		assert.Equal(t, "done", string(res.Value))
	}
	assert.Equal(t, 1, runs)
}
