package outbox

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// TestAdminRefusesBadKeysBeforeReading: Unpark, Discard and Replay refuse a namespace or key
// that is empty, too long or not UTF-8 with lwt.ErrInvalidKey, as the record table does, before
// any read. The session was never connected: a call that reached the driver would fail
// otherwise (a key that is not UTF-8 was sent, and Cassandra refused it).
func TestAdminRefusesBadKeysBeforeReading(t *testing.T) {
	t.Parallel()
	admin, err := NewAdmin(&gocql.Session{})
	require.NoError(t, err)
	ctx := context.Background()
	for _, k := range [][2]string{{"orders", "\xff\xfe"}, {"\xc3", "o-1"}, {"orders", ""}, {"orders", strings.Repeat("k", 256)}} {
		_, err := admin.Unpark(ctx, k[0], k[1], true)
		require.ErrorIs(t, err, lwt.ErrInvalidKey, "Unpark %q", k)
		var ke *lwt.KeyError
		require.ErrorAs(t, err, &ke)
		_, err = admin.Discard(ctx, k[0], k[1], false)
		require.ErrorIs(t, err, lwt.ErrInvalidKey, "Discard %q", k)
		_, err = admin.Replay(ctx, k[0], k[1], true)
		require.ErrorIs(t, err, lwt.ErrInvalidKey, "Replay %q", k)
	}
}

// FuzzCheckName: checkName accepts exactly what the record table's keys accept: 1 to
// lwt.DefaultMaxKeyLength bytes of UTF-8.
func FuzzCheckName(f *testing.F) {
	f.Add("o-1")
	f.Add("\xff")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		want := s != "" && len(s) <= lwt.DefaultMaxKeyLength && utf8.ValidString(s)
		if got := checkName("key", s) == nil; got != want {
			t.Fatalf("checkName(%q) accepts: %t, the key rules: %t", s, got, want)
		}
	})
}
