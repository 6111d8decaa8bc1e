package schema_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

// beforeMigrations is a copy of schema/cql as it was released before migrations were recorded:
// an install made from it has the toolkit's tables and no migrations table.
const beforeMigrations = "testdata/before-migrations"

// installUnversioned applies the files of dir to a new keyspace as that release did (no
// records), after edit rewrites each file, and returns an admin session and the keyspace. The
// keyspace is dropped when the test ends.
func installUnversioned(t *testing.T, dir string, edit func(string) string) (*gocql.Session, string) {
	t.Helper()
	session, ks := bareSession(t)
	files := fstest.MapFS{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		src, err := os.ReadFile(dir + "/" + e.Name())
		require.NoError(t, err)
		files[e.Name()] = &fstest.MapFile{Data: []byte(edit(string(src)))}
	}
	ms, err := schema.MigrationsFrom(files, schema.WithKeyspace(ks))
	require.NoError(t, err)
	for _, m := range ms {
		for _, s := range m.Statements {
			testnode.SchemaChange(t, session, s)
		}
	}
	return session, ks
}

func states(r schema.Report) map[string]schema.MigrationState {
	out := map[string]schema.MigrationState{}
	for _, m := range r.Migrations {
		out[m.Name] = m.State
	}
	return out
}

func TestMigrateUpgradesAnUnversionedInstallInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := installUnversioned(t, beforeMigrations, func(s string) string { return s })
	require.NoError(t, session.Query(`INSERT INTO "`+ks+`".idempotency_keys (namespace, key, status) VALUES ('ns', 'k', 'COMPLETED')`).Exec())

	before, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.True(t, before.KeyspaceExists)
	assert.False(t, before.Versioned, "installed before migrations were recorded")
	assert.Equal(t, 9, before.Tables)
	all, err := schema.Migrations()
	require.NoError(t, err)
	assert.Len(t, before.Pending(), len(all), "nothing is recorded yet")

	done, err := schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.Len(t, done, len(all))

	after, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.True(t, after.Versioned)
	assert.Empty(t, after.Pending())
	for _, m := range after.Migrations {
		assert.Equal(t, schema.Applied, m.State, m.Name)
		assert.WithinDuration(t, time.Now(), m.AppliedAt, time.Minute, m.Name)
	}
	for _, table := range []string{"idempotency_keys", "processed_messages"} {
		assert.True(t, hasColumn(t, session, ks, table, "lease_owner"), "005 added the lease cells to %s", table)
	}
	var status string
	require.NoError(t, session.Query(`SELECT status FROM "`+ks+`".idempotency_keys WHERE namespace = 'ns' AND key = 'k'`).Scan(&status))
	assert.Equal(t, "COMPLETED", status, "the upgrade keeps the data")

	again, err := schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.Empty(t, again, "a second run has nothing to do")
}

// An install older still, from before the fast path's epoch column, gains the column in place.
func TestMigrateAddsTheEpochColumnToAnOlderInstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noEpoch := func(s string) string {
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "epoch ") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	session, ks := installUnversioned(t, beforeMigrations, noEpoch)
	require.False(t, hasColumn(t, session, ks, "idempotency_keys", "epoch"), "the old install has no epoch")

	_, err := schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	for _, table := range []string{"idempotency_keys", "processed_messages"} {
		assert.True(t, hasColumn(t, session, ks, table, "epoch"), table)
	}
}

func TestStatusFlagsChangedAndUnknownMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	table := `"` + ks + `".` + schema.MigrationsTable
	require.NoError(t, session.Query(`UPDATE `+table+` SET checksum = 'edited' WHERE version = 1`).Exec())
	require.NoError(t, session.Query(`INSERT INTO `+table+` (version, name, checksum, applied_at) VALUES (999, '999_future.cql', 'x', toTimestamp(now()))`).Exec())

	r, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	got := states(r)
	assert.Equal(t, schema.Changed, got["001_idempotency_keys.cql"])
	assert.Equal(t, schema.Unknown, got["999_future.cql"])
	assert.Equal(t, schema.Applied, got["002_processed_messages.cql"])
	require.Len(t, r.Changed(), 1)
	assert.Equal(t, "edited", r.Changed()[0].AppliedChecksum)

	_, err = schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.ErrorIs(t, err, schema.ErrNewerSchema, "a newer release's migration is refused first")
	require.NoError(t, session.Query(`DELETE FROM `+table+` WHERE version = 999`).Exec())
	_, err = schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.ErrorIs(t, err, schema.ErrMigrationChanged)
	assert.Contains(t, err.Error(), "001_idempotency_keys.cql")
}

// TestMigrateRefusesANewerSchema: a keyspace on which a newer release recorded a migration
// is refused by Migrate and reported by Status, naming both versions.
func TestMigrateRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	all, err := schema.Migrations()
	require.NoError(t, err)
	known := all[len(all)-1].Version
	future := known + 1
	require.NoError(t, session.Query(`INSERT INTO "`+ks+`".`+schema.MigrationsTable+` (version, name, checksum, applied_at) VALUES (?, ?, 'x', toTimestamp(now()))`,
		future, fmt.Sprintf("%03d_from_the_future.cql", future)).Exec())

	_, err = schema.Migrate(ctx, session, schema.WithKeyspace(ks))
	require.ErrorIs(t, err, schema.ErrNewerSchema)
	var newer *schema.NewerSchemaError
	require.ErrorAs(t, err, &newer)
	assert.Equal(t, future, newer.Recorded.Version)
	assert.Equal(t, known, newer.Known)
	assert.Contains(t, err.Error(), fmt.Sprintf("records migration %d", future))
	assert.Contains(t, err.Error(), fmt.Sprintf("knows versions up to %d", known))

	r, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err, "Status reports; it does not refuse")
	require.ErrorIs(t, r.Err(), schema.ErrNewerSchema)
}

// TestMigrateRecreatesWhatWasDropped: a dropped table and a dropped column are drift; Migrate
// creates them again with the files' statements, and the status is clean after.
func TestMigrateRecreatesWhatWasDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := testnode.NewSession(t)
	testnode.SchemaChange(t, session, `DROP TABLE IF EXISTS "`+ks+`".counter_ops`)
	testnode.SchemaChange(t, session, `ALTER TABLE "`+ks+`".idempotency_keys DROP IF EXISTS lease_owner`)

	r, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.Empty(t, r.Pending())
	assert.ElementsMatch(t, []schema.Drift{
		{Table: "counter_ops", Migration: "004_counter_dedup.cql"},
		{Table: "idempotency_keys", Column: "lease_owner", Migration: "005_server_leases.cql"},
	}, r.Drift)
	require.ErrorIs(t, r.Err(), schema.ErrDrift)
	assert.Contains(t, r.Err().Error(), "table counter_ops is missing (created by 004_counter_dedup.cql)")

	require.NoError(t, testnode.Migrate(t, session, schema.WithKeyspace(ks)))
	assert.True(t, hasColumn(t, session, ks, "counter_ops", "applied_at"))
	assert.True(t, hasColumn(t, session, ks, "idempotency_keys", "lease_owner"))
	r, err = schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.Empty(t, r.Drift)
	assert.NoError(t, r.Err())
}

func TestStatusOfAMissingKeyspace(t *testing.T) {
	t.Parallel()
	session, err := testnode.Cluster(t).CreateSession()
	require.NoError(t, err)
	defer session.Close()
	r, err := schema.Status(context.Background(), session, schema.WithKeyspace("t_never_created_here"))
	require.NoError(t, err)
	assert.False(t, r.KeyspaceExists)
	all, err := schema.Migrations()
	require.NoError(t, err)
	assert.Len(t, r.Pending(), len(all))
}

func TestChecksumIgnoresCommentsAndLayoutOnly(t *testing.T) {
	base := "-- a comment\nCREATE TABLE IF NOT EXISTS cassdedup.t (a text PRIMARY KEY);\n"
	sum := func(src string) string {
		stmts := fstest.MapFS{"001_t.cql": &fstest.MapFile{Data: []byte(src)}}
		ms := migrationsOf(t, stmts)
		return ms
	}
	assert.Equal(t, sum(base), sum("-- another comment\nCREATE TABLE IF NOT EXISTS   cassdedup.t\n  (a text PRIMARY KEY);"))
	assert.NotEqual(t, sum(base), sum("CREATE TABLE IF NOT EXISTS cassdedup.t (a text PRIMARY KEY, b int);"))
}

// migrationsOf returns the checksum of the one migration in fsys, through the exported API:
// the embedded files' checksums must equal those of the same files read from disk.
func migrationsOf(t *testing.T, fsys fs.FS) string {
	t.Helper()
	ms, err := schema.MigrationsFrom(fsys)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	return ms[0].Checksum
}

func TestMigrationsAreNumberedUniquelyInOrder(t *testing.T) {
	ms, err := schema.Migrations()
	require.NoError(t, err)
	onDisk, err := schema.MigrationsFrom(os.DirFS("cql"))
	require.NoError(t, err)
	require.Equal(t, len(onDisk), len(ms))
	for i, m := range ms {
		assert.Equal(t, i, m.Version, "versions run 0, 1, 2, ... without gaps: %s", m.Name)
		assert.Len(t, m.Checksum, 64)
		assert.Equal(t, onDisk[i].Checksum, m.Checksum, "the embedded file is the one on disk: %s", m.Name)
	}
	_, err = schema.MigrationsFrom(fstest.MapFS{
		"001_a.cql": &fstest.MapFile{Data: []byte("SELECT 1")}, "1_b.cql": &fstest.MapFile{Data: []byte("SELECT 2")},
	})
	assert.ErrorIs(t, err, schema.ErrMalformedCQL, "two files with one version")
	_, err = schema.MigrationsFrom(fstest.MapFS{"keyspace.cql": &fstest.MapFile{Data: []byte("SELECT 1")}})
	assert.ErrorIs(t, err, schema.ErrMalformedCQL, "a file without a number")
}

func hasColumn(t *testing.T, s *gocql.Session, ks, table, column string) bool {
	t.Helper()
	var name string
	iter := s.Query(`SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? AND column_name = ?`, ks, table, column).Iter()
	found := iter.Scan(&name)
	require.NoError(t, iter.Close())
	return found
}
