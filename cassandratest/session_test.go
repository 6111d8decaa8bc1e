package cassandratest

import (
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/testnode"
)

// TestNewSessionKeyspaceLivesAsLongAsTheTest: the session's default keyspace has the schema's
// tables while the test runs and is gone once the test's cleanup has run.
func TestNewSessionKeyspaceLivesAsLongAsTheTest(t *testing.T) {
	var ks string
	t.Run("user", func(t *testing.T) {
		var session *gocql.Session
		session, ks = NewSession(t)
		assert.Regexp(t, `^t_testnewsessionkeyspacelivesaslon_[0-9a-f]{12}$`, ks)
		assert.Positive(t, tableCount(t, session, ks))
		require.NoError(t, session.Query(`INSERT INTO idempotency_keys (namespace, key, status) VALUES ('ns', 'k', 'STARTED')`).Exec(),
			"the keyspace is the session's default")
	})
	admin := testnode.Connect(t, Cluster(t))
	defer admin.Close()
	assert.Zero(t, tableCount(t, admin, ks), "keyspace %s outlived its test", ks)
}

func tableCount(t *testing.T, s *gocql.Session, ks string) int {
	t.Helper()
	var n int
	require.NoError(t, s.Query(`SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ?`, ks).Scan(&n))
	return n
}
