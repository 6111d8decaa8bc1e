package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpectedTablesFollowTheMigrations(t *testing.T) {
	ms, err := Migrations(WithKeyspace("k"))
	require.NoError(t, err)
	tables := map[string]*tableModel{}
	for _, tm := range expectedTables(ms) {
		tables[tm.name] = tm
	}
	keys := tables["idempotency_keys"]
	require.NotNil(t, keys)
	assert.Equal(t, "001_idempotency_keys.cql", keys.migration)
	assert.True(t, keys.column("namespace").key)
	assert.True(t, keys.column("key").key)
	assert.False(t, keys.column("status").key)
	require.NotNil(t, keys.column("lease_owner"), "added by an ALTER")
	assert.Equal(t, "uuid", keys.column("lease_owner").cqlType)
	assert.Equal(t, "005_server_leases.cql", keys.column("lease_owner").createdBy)
	assert.Contains(t, tables, "counter_ops_by_hour")
	assert.True(t, tables["counter_ops_by_hour"].column("op_id").key, "a clustering column")
}

func TestExpectedTablesReadAltersAndDrops(t *testing.T) {
	ms := []Migration{
		{Name: "001_a.cql", Statements: []string{
			`CREATE TABLE IF NOT EXISTS "k".a (id text, m map<text, int>, f frozen<list<text>>, PRIMARY KEY ((id)))`,
			`CREATE TABLE "k"."b" (id int PRIMARY KEY, v text)`,
		}},
		{Name: "002_b.cql", Statements: []string{
			`ALTER TABLE "k".a ADD (x int, y text)`,
			`ALTER TABLE "k".a DROP m`,
			`DROP TABLE IF EXISTS "k".b`,
			`CREATE INDEX IF NOT EXISTS ON "k".a (y)`,
		}},
	}
	got := expectedTables(ms)
	require.Len(t, got, 1)
	var names []string
	for _, c := range got[0].columns {
		names = append(names, c.name+" "+c.cqlType)
	}
	assert.Equal(t, []string{"id text", "f frozen<list<text>>", "x int", "y text"}, names)
	assert.True(t, got[0].column("id").key)
}
