package lwt

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/internal/testnode"
)

func newBenchStore(b *testing.B) (*Store, *gocql.Session, string) {
	b.Helper()
	session, ks := testnode.NewSession(b)
	s, err := NewStore(session, IdempotencyKeys(ks))
	require.NoError(b, err)
	return s, session, ks
}

// newTestStore returns a store over idempotency_keys in a fresh keyspace, and the session.
func newTestStore(t *testing.T, opts ...Option) (*Store, *gocql.Session, string) {
	t.Helper()
	session, ks := testnode.NewSession(t)
	s, err := NewStore(session, IdempotencyKeys(ks), opts...)
	require.NoError(t, err)
	return s, session, ks
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
