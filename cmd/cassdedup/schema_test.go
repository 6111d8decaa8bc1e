package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

// installBeforeMigrations makes a keyspace from the schema files as they were released before
// migrations were recorded (schema/testdata/before-migrations), and returns its name.
func installBeforeMigrations(t *testing.T) string {
	t.Helper()
	session, err := testnode.AdminCluster(t).CreateSession()
	require.NoError(t, err)
	ks := "t_cli_upgrade_" + strings.ReplaceAll(gocql.TimeUUID().String(), "-", "")[:16]
	t.Cleanup(func() {
		_ = session.Query(`DROP KEYSPACE IF EXISTS "` + ks + `"`).Exec()
		session.Close()
	})
	ms, err := schema.MigrationsFrom(os.DirFS("../../schema/testdata/before-migrations"), schema.WithKeyspace(ks))
	require.NoError(t, err)
	for _, m := range ms {
		for _, s := range m.Statements {
			testnode.SchemaChange(t, session, s)
		}
	}
	return ks
}

func TestSchemaStatusBeforeAndAfterAnUpgrade(t *testing.T) {
	t.Parallel()
	ks := installBeforeMigrations(t)
	all, err := schema.Migrations()
	require.NoError(t, err)

	before := ok(t, "schema", "status", "-keyspace", ks)
	assert.Contains(t, before, fmt.Sprintf("keyspace %s: %d migrations, %d pending, 0 changed", ks, len(all), len(all)))
	assert.Regexp(t, `(?m)^7 +007_epoch_columns\.cql +pending +- +[0-9a-f]{12}$`, before)
	assert.Contains(t, before, "note: the keyspace has 9 tables but no schema_migrations table: it was installed before migrations were recorded")

	applied := ok(t, "schema", "apply", "-keyspace", ks)
	assert.Equal(t, len(all)+1, strings.Count(applied, "\n"), applied)
	assert.Contains(t, applied, "007_epoch_columns.cql")
	assert.Contains(t, ok(t, "schema", "apply", "-keyspace", ks), "is up to date: nothing to apply")

	var after struct {
		Versioned  bool            `json:"versioned"`
		Migrations []migrationView `json:"migrations"`
		Notes      []string        `json:"notes"`
	}
	okJSON(t, &after, "schema", "status", "-keyspace", ks)
	assert.True(t, after.Versioned)
	assert.Empty(t, after.Notes)
	require.Len(t, after.Migrations, len(all))
	for i, m := range after.Migrations {
		assert.Equal(t, "applied", m.State, m.Name)
		assert.Equal(t, all[i].Checksum, m.AppliedChecksum, m.Name)
		assert.NotNil(t, m.AppliedAt, m.Name)
	}

	session, err := testnode.Cluster(t).CreateSession()
	require.NoError(t, err)
	defer session.Close()
	require.NoError(t, session.Query(`UPDATE "`+ks+`".schema_migrations SET checksum = 'deadbeef' WHERE version = 2`).Exec())
	r := cli(t, nil, "schema", "status", "-keyspace", ks)
	assert.Equal(t, exitFailure, r.code)
	assert.Regexp(t, `(?m)^2 +002_processed_messages\.cql +changed `, r.stdout)
	assert.Contains(t, r.stdout, "(recorded deadbeef)")
	assert.Contains(t, r.stderr, "applied migration changed: 002_processed_messages.cql")
	r = cli(t, nil, "schema", "apply", "-keyspace", ks)
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "applied migration changed: 002_processed_messages.cql")
}

// TestSchemaDriftAndRefusals: status names a dropped table and exits 1, apply -dry-run says
// it would create it and changes nothing, apply creates it; a newer release's migration and a
// replication the cluster cannot hold are refused.
func TestSchemaDriftAndRefusals(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	testnode.SchemaChange(t, session, `DROP TABLE IF EXISTS "`+ks+`".counter_ops`)

	r := cli(t, nil, "schema", "status", "-keyspace", ks)
	assert.Equal(t, exitFailure, r.code, r.stderr)
	assert.Contains(t, r.stdout, "drift: table counter_ops is missing (created by 004_counter_dedup.cql); schema apply creates it again")
	assert.Contains(t, r.stderr, "table counter_ops is missing")

	dry := ok(t, "schema", "apply", "-dry-run", "-keyspace", ks)
	assert.Contains(t, dry, "would repair: table counter_ops is missing")
	assert.Contains(t, dry, `would run: CREATE TABLE IF NOT EXISTS "`+ks+`".counter_ops (`)
	assert.Contains(t, dry, "dry run: nothing changed")
	assert.Equal(t, exitFailure, cli(t, nil, "schema", "status", "-keyspace", ks).code, "the dry run changed nothing")

	assert.Contains(t, ok(t, "schema", "apply", "-keyspace", ks), "repair: table counter_ops is missing")
	assert.Contains(t, ok(t, "schema", "status", "-keyspace", ks), upToDate(t))

	all, err := schema.Migrations()
	require.NoError(t, err)
	future := all[len(all)-1].Version + 1
	require.NoError(t, session.Query(`INSERT INTO "`+ks+`".schema_migrations (version, name, checksum, applied_at) VALUES (?, 'future.cql', 'x', toTimestamp(now()))`, future).Exec())
	for _, verb := range []string{"status", "apply"} {
		r = cli(t, nil, "schema", verb, "-keyspace", ks)
		assert.Equal(t, exitFailure, r.code, verb)
		assert.Contains(t, r.stderr, fmt.Sprintf("records migration %d", future), verb)
		assert.Contains(t, r.stderr, fmt.Sprintf("knows versions up to %d", future-1), verb)
	}

	var peers int
	require.NoError(t, session.Query(`SELECT count(*) FROM system.peers`).Scan(&peers))
	fresh := ks + "_rf"
	r = cli(t, nil, "schema", "apply", "-keyspace", fresh, "-rf", fmt.Sprint(peers+2))
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "replication needs more nodes than the cluster has")
	r = cli(t, nil, "schema", "status", "-keyspace", fresh, "-json")
	assert.Contains(t, r.stdout, `"keyspace_exists": false`, "nothing was created")
}

func TestSchemaPrintNeedsNoCluster(t *testing.T) {
	r := cli(t, map[string]string{"CASSANDRA_HOSTS": "192.0.2.1:1"}, "schema", "print", "-keyspace", "payments", "-dc", "dc1:3,dc2:3")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `CREATE KEYSPACE IF NOT EXISTS "payments" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3};`)
	assert.Contains(t, r.stdout, "-- 007_epoch_columns.cql (version 7, checksum ")
	assert.Contains(t, r.stdout, `CREATE TABLE IF NOT EXISTS "payments".schema_migrations`)
	assert.NotContains(t, r.stdout, "cassdedup.")
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "usage: cassdedup COMMAND"},
		{[]string{"-h"}, exitOK, ""},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"schema", "-h"}, exitOK, "schema status"},
		{[]string{"messages", "--help"}, exitOK, "messages stuck"},
		{[]string{"schema"}, exitUsage, "schema needs a subcommand"},
		{[]string{"schema", "frobnicate"}, exitUsage, `unknown command "schema frobnicate"`},
		{[]string{"key", "get", "only-one"}, exitUsage, "key get takes 2 arguments (NAMESPACE KEY), got 1"},
		{[]string{"key", "get", "a", "b", "-nope"}, exitUsage, "flag provided but not defined: -nope"},
		{[]string{"key", "get", "a", "b", "-consistency", "MOST"}, exitUsage, `consistency "MOST"`},
		{[]string{"key", "get", "a", "b", "-keyspace", "no-dash"}, exitUsage, "invalid identifier"},
		{[]string{"schema", "print", "-dc", "dc1"}, exitUsage, "-dc wants name:replicas pairs"},
		{[]string{"schema", "print", "-rf", "0"}, exitUsage, "WithReplication({'class': 'SimpleStrategy', 'replication_factor': 0}): replication factor 0"},
		{[]string{"outbox", "pending", "-limit", "0"}, exitUsage, "-limit 0 and -since 1h0m0s must be positive"},
		{[]string{"counters", "unapplied", "-since", "-1h"}, exitUsage, "-limit 100 and -since -1h0m0s must be positive"},
		{[]string{"counters", "repair", "c", "op"}, exitUsage, "-outcome must be applied or missing"},
		{[]string{"message", "get", "g", "t", "-1", "id"}, exitUsage, "flag provided but not defined: -1"},
		{[]string{"message", "get", "g", "t", "x", "id"}, exitUsage, `partition "x" must be a non-negative integer`},
		{[]string{"key", "get", "a", "b", "-tls-cert", "c.pem"}, exitUsage, "-tls-cert and -tls-key go together"},
	} {
		r := cli(t, nil, tc.args...)
		assert.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stdout+r.stderr, tc.msg, "%v", tc.args)
	}
	help := cli(t, nil, "keys", "stuck", "-h")
	assert.Equal(t, exitOK, help.code)
	assert.Contains(t, help.stdout, "usage: cassdedup keys stuck [FLAGS]")
	assert.Contains(t, help.stdout, "-rate int")
	// A key that starts with a dash comes after "--".
	r := cli(t, map[string]string{"CASSANDRA_HOSTS": "127.0.0.1:1"}, "key", "get", "-connect-timeout", "100ms", "--", "ns", "-k")
	assert.Equal(t, exitFailure, r.code, "parsed, then no node on port 1: %s", r.stderr)
	assert.Contains(t, r.stderr, "connect to 127.0.0.1:1")
}
