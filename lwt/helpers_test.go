package lwt

import (
	"context"
	"github.com/cassdedup/cassdedup/internal/optcheck"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

func newBenchStore(b *testing.B) (*Store, *gocql.Session, string) {
	b.Helper()
	session, ks := testnode.NewSession(b)
	s, err := NewStore(session, IdempotencyKeys(ks))
	require.NoError(b, err)
	return s, session, ks
}

// newTestStore returns a store over idempotency_keys in a fresh keyspace, and the session.
func newTestStore(t *testing.T, opts ...StoreOption) (*Store, *gocql.Session, string) {
	t.Helper()
	session, ks := testnode.NewSession(t)
	s, err := NewStore(session, IdempotencyKeys(ks), opts...)
	require.NoError(t, err)
	return s, session, ks
}

// newTestClock is a hand-moved clock starting at the real time, so TTLs derived from it stay
// sane for the node.
func newTestClock() *testnode.Clock { return testnode.NewClock(time.Now()) }

// waitLeaseExpired polls the record of key until Cassandra has expired its lease cell: leases
// are judged by the server's clock, which no test clock can move.
func waitLeaseExpired(t *testing.T, s *Store, key Key) {
	t.Helper()
	require.Eventually(t, func() bool {
		rec, err := s.Get(context.Background(), key)
		return err == nil && rec.LeaseOwner == (gocql.UUID{})
	}, 10*time.Second, 100*time.Millisecond, "the server never expired the lease")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// readRecord reads a record directly, bypassing the store.
func readRecord(t *testing.T, s *Store, key Key) *Record {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	return rec
}

func mustUUID(t *testing.T) gocql.UUID {
	u, err := gocql.RandomUUID()
	require.NoError(t, err)
	return u
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// storeConfig is the configuration NewStore would build from opts.
func storeConfig(opts ...StoreOption) (config, error) {
	return newConfig(optcheck.Unwrap(opts, StoreOption.storeOption))
}
