package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// columnsOf returns each table's columns and types as the model reads them from stmts.
func columnsOf(stmts []string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, t := range expectedTables([]Migration{{Name: "m", Statements: stmts}}) {
		cols := map[string]string{}
		for _, c := range t.columns {
			cols[c.name] = strings.ToLower(c.cqlType)
		}
		out[t.name] = cols
	}
	return out
}

// TestFoldedLeavesTheSchemaOfTheMigrations: the embedded migrations, folded, define every table
// with the columns the migrations leave it, with no ADD left for a table they create and fewer
// schema changes. (TestMigrateInstallsWhatTheMigrationsMake compares the two on a node.)
func TestFoldedLeavesTheSchemaOfTheMigrations(t *testing.T) {
	ms, err := Migrations(WithKeyspace("k"))
	require.NoError(t, err)
	all, fold := flatten(ms), folded(ms)
	assert.Equal(t, columnsOf(all), columnsOf(fold))
	for _, stmt := range fold {
		upper := strings.Fields(strings.ToUpper(stmt))
		assert.False(t, hasWords(upper, "ALTER", "TABLE") && upper[3] == "ADD", "left unfolded: %s", stmt)
	}
	assert.Less(t, len(fold), len(all)*2/3, "folded %d statements into %d", len(all), len(fold))
	t.Logf("%d statements folded into %d", len(all), len(fold))
}

func TestFoldedKeepsWhatWouldChangeTheSchema(t *testing.T) {
	create := "CREATE TABLE IF NOT EXISTS k.t (\n    a text PRIMARY KEY,\n    b int\n) WITH comment = 'x'"
	cases := map[string]struct {
		stmts, want []string
	}{
		"added columns join the create, one already defined is skipped": {
			stmts: []string{create, "ALTER TABLE k.t ADD IF NOT EXISTS c map<uuid, bigint> static",
				"ALTER TABLE k.t ADD IF NOT EXISTS b int", "ALTER TABLE k.t ADD (d text, e int)"},
			want: []string{"CREATE TABLE IF NOT EXISTS k.t (\n    d text,\n    e int,\n    c map<uuid, bigint> static,\n    a text PRIMARY KEY,\n    b int\n) WITH comment = 'x'"},
		},
		"options stay a statement and do not stop folding": {
			stmts: []string{create, "ALTER TABLE k.t WITH default_time_to_live = 60", "ALTER TABLE k.t ADD c int"},
			want:  []string{"CREATE TABLE IF NOT EXISTS k.t (\n    c int,\n    a text PRIMARY KEY,\n    b int\n) WITH comment = 'x'", "ALTER TABLE k.t WITH default_time_to_live = 60"},
		},
		"a column added again after its drop is added after the drop": {
			stmts: []string{create, "ALTER TABLE k.t DROP b", "ALTER TABLE k.t ADD b text"},
			want:  []string{create, "ALTER TABLE k.t DROP b", "ALTER TABLE k.t ADD b text"},
		},
		"a table dropped and created again keeps its statements": {
			stmts: []string{create, "DROP TABLE IF EXISTS k.t", create, "ALTER TABLE k.t ADD c int"},
			want:  []string{create, "DROP TABLE IF EXISTS k.t", create, "ALTER TABLE k.t ADD c int"},
		},
		"a table the statements do not create is altered as written": {
			stmts: []string{"ALTER TABLE k.other ADD c int"},
			want:  []string{"ALTER TABLE k.other ADD c int"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, folded([]Migration{{Statements: c.stmts}}))
		})
	}
}
