package outbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/lwt"
)

// TestRecordOf: the runs whose events a relay can find are accepted, the others refused before
// anything is staged.
func TestRecordOf(t *testing.T) {
	c, err := newConfig(false, []Option{WithKeyspace("ks")})
	require.NoError(t, err)
	guardTable := lwt.Table{Keyspace: "ks", Name: "processed_messages", KeyColumns: guardColumns}

	rec, err := c.recordOf(Table("ks"), lwt.IdempotencyKey("shop", "o-1"))
	require.NoError(t, err)
	assert.Equal(t, record{namespace: "shop", key: "o-1"}, rec)

	rec, err = c.recordOf(guardTable, lwt.Key{"g", "t", int32(7), "m-1"})
	require.NoError(t, err)
	assert.Equal(t, record{table: "processed_messages", namespace: GuardNamespace("g", "t", 7), key: "m-1"}, rec)

	refused := map[string]struct {
		table lwt.Table
		key   lwt.Key
	}{
		"other keyspace":       {Table("other"), lwt.IdempotencyKey("shop", "o-1")},
		"other records table":  {lwt.Table{Keyspace: "ks", Name: "orders", KeyColumns: operationColumns}, lwt.IdempotencyKey("shop", "o-1")},
		"reserved namespace":   {Table("ks"), lwt.IdempotencyKey("\x00g\x00t\x007", "m-1")},
		"not strings":          {Table("ks"), lwt.Key{"shop", 1}},
		"other key columns":    {lwt.Table{Keyspace: "ks", Name: "x", KeyColumns: []string{"id"}}, lwt.Key{"a"}},
		"partition not int32":  {guardTable, lwt.Key{"g", "t", 7, "m-1"}},
		"NUL in group":         {guardTable, lwt.Key{"g\x00", "t", int32(7), "m-1"}},
		"NUL in topic":         {guardTable, lwt.Key{"g", "\x00t", int32(7), "m-1"}},
		"guard key too short":  {guardTable, lwt.Key{"g", "t", int32(7)}},
		"guard in other space": {lwt.Table{Keyspace: "other", Name: "processed_messages", KeyColumns: guardColumns}, lwt.Key{"g", "t", int32(7), "m"}},
	}
	for name, tc := range refused {
		_, err := c.recordOf(tc.table, tc.key)
		assert.ErrorIs(t, err, ErrUnsupportedKey, name)
	}
}

// FuzzGuardNamespace: GuardNamespace is injective for the groups and topics it accepts (no NUL),
// parseGuardNamespace inverts it, and no other string parses: one message has one namespace.
func FuzzGuardNamespace(f *testing.F) {
	f.Add("billing", "orders", int32(3), "\x00a\x00b\x001")
	f.Add("", "", int32(0), "\x00\x00\x00-1")
	f.Add("g", "t", int32(2147483647), "\x00x\x00y\x0099999999999")
	f.Fuzz(func(t *testing.T, group, topic string, partition int32, s string) {
		if partition >= 0 && !containsNUL(group) && !containsNUL(topic) {
			g, tp, p, ok := parseGuardNamespace(GuardNamespace(group, topic, partition))
			if !ok || g != group || tp != topic || p != partition {
				t.Fatalf("round trip of %q %q %d: %q %q %d %v", group, topic, partition, g, tp, p, ok)
			}
		}
		if g, tp, p, ok := parseGuardNamespace(s); ok && GuardNamespace(g, tp, p) != s {
			t.Fatalf("%q parses as %q %q %d, which prints otherwise", s, g, tp, p)
		}
	})
}

func containsNUL(s string) bool {
	for i := range len(s) {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
