package schema_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
)

// liveSchema returns what system_schema says of the tables of ks, the migrations table left
// out: each row of tables, columns and dropped_columns as JSON, by table, without the keyspace's
// name and the table's id.
func liveSchema(t *testing.T, s *gocql.Session, ks string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, view := range []string{"tables", "columns", "dropped_columns"} {
		iter := s.Query(`SELECT JSON * FROM system_schema.`+view+` WHERE keyspace_name = ?`, ks).Iter()
		var row string
		for iter.Scan(&row) {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(row), &m))
			table, _ := m["table_name"].(string)
			if table == schema.MigrationsTable {
				continue
			}
			delete(m, "keyspace_name")
			delete(m, "id")
			out[view+" "+table] = append(out[view+" "+table], m)
		}
		require.NoError(t, iter.Close())
	}
	return out
}

// TestMigrateInstallsWhatTheMigrationsMake: Migrate installs a new keyspace in one pass, each
// table's added columns folded into its CREATE TABLE; system_schema must hold exactly what the
// migrations make when their statements run one by one, option for option and column for
// column, and the new keyspace must record every migration as applied, with no drift.
func TestMigrateInstallsWhatTheMigrationsMake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stepwise, stepKS := installUnversioned(t, "cql", func(s string) string { return s })
	_, ks := bareSession(t)
	done, err := schema.Migrate(ctx, stepwise, schema.WithKeyspace(ks))
	require.NoError(t, err)
	ms, err := schema.Migrations()
	require.NoError(t, err)
	assert.Len(t, done, len(ms))
	assert.Equal(t, liveSchema(t, stepwise, stepKS), liveSchema(t, stepwise, ks))
	r, err := schema.Status(ctx, stepwise, schema.WithKeyspace(ks))
	require.NoError(t, err)
	require.NoError(t, r.Err())
	assert.Empty(t, r.Pending())
	assert.Empty(t, r.Drift)
}
