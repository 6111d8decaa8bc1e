package schema_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/schema"
	"github.com/cassdedup/cassdedup/testnode"
)

func TestApplyTwiceIsHarmless(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t) // the first apply
	require.NoError(t, schema.Apply(context.Background(), session, schema.WithKeyspace(ks)))
}

func TestApplyRejectsInvalidKeyspaceBeforeRunningAnything(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	err := schema.Apply(context.Background(), session, schema.WithKeyspace("no-dashes"))
	require.ErrorIs(t, err, schema.ErrInvalidIdentifier)
	assert.Contains(t, err.Error(), `"no-dashes"`)
}

// TestApplyRefusesBadArgumentsBeforeCreatingAnything: each bad argument fails with the
// sentinel its doc names, and no keyspace is left behind (a bad timeout used to leave one
// without tables).
func TestApplyRefusesBadArgumentsBeforeCreatingAnything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.ErrorIs(t, schema.Apply(ctx, nil), schema.ErrInvalidOption)

	session, ks := testnode.NewSession(t)
	cases := []struct {
		name string
		opt  schema.Option
		want error
	}{
		{"zero agreement timeout", schema.WithAgreementTimeout(0), schema.ErrInvalidOption},
		{"negative agreement timeout", schema.WithAgreementTimeout(-time.Second), schema.ErrInvalidOption},
		{"nil option", nil, schema.ErrInvalidOption},
		{"bad datacenter name", schema.WithReplication(schema.NetworkTopologyStrategy(map[string]int{"dc'1": 3})), schema.ErrInvalidReplication},
		{"replication factor 0", schema.WithReplication(schema.SimpleStrategy(0)), schema.ErrInvalidReplication},
	}
	for i, tc := range cases {
		fresh := fmt.Sprintf("%s_bad%d", ks, i)
		t.Cleanup(func() { _ = session.Query(`DROP KEYSPACE IF EXISTS ` + fresh).Exec() })
		err := schema.Apply(ctx, session, tc.opt, schema.WithKeyspace(fresh))
		require.ErrorIs(t, err, tc.want, tc.name)
		for _, other := range []error{schema.ErrInvalidOption, schema.ErrInvalidIdentifier, schema.ErrInvalidReplication} {
			if other != tc.want {
				assert.NotErrorIs(t, err, other, tc.name)
			}
		}
		assert.False(t, keyspaceExists(t, session, fresh), "%s: keyspace %s was created", tc.name, fresh)
	}
}

// bareSession is a session on the test node with a fresh keyspace name and no keyspace: for
// tests that apply the schema themselves. The keyspace is dropped when the test ends.
func bareSession(t *testing.T) (*gocql.Session, string) {
	t.Helper()
	session, err := testnode.AdminCluster(t).CreateSession()
	require.NoError(t, err)
	ks := "t_bare_" + strings.ReplaceAll(gocql.TimeUUID().String(), "-", "")[:20]
	t.Cleanup(func() {
		_ = session.Query(`DROP KEYSPACE IF EXISTS "` + ks + `"`).Exec()
		session.Close()
	})
	return session, ks
}

// nodes counts the nodes of the test cluster.
func nodes(t *testing.T, s *gocql.Session) int {
	t.Helper()
	var peers int
	require.NoError(t, s.Query(`SELECT count(*) FROM system.peers`).Scan(&peers))
	return peers + 1
}

// TestApplyRefusesAReplicationTheClusterCannotHold: one replica more than the cluster has
// nodes, or a datacenter it does not have, is refused before the keyspace is created.
func TestApplyRefusesAReplicationTheClusterCannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := bareSession(t)
	n := nodes(t, session)
	for _, r := range []schema.Replication{
		schema.SimpleStrategy(n + 1),
		schema.NetworkTopologyStrategy(map[string]int{"no_such_dc": 1}),
	} {
		err := schema.Apply(ctx, session, schema.WithKeyspace(ks), schema.WithReplication(r))
		require.ErrorIs(t, err, schema.ErrReplicationUnavailable, "%v", r)
		assert.Contains(t, err.Error(), fmt.Sprintf("keyspace %s not created", ks))
		assert.False(t, keyspaceExists(t, session, ks), "%v: the keyspace was created", r)
	}
}

// TestApplyCompletesAKeyspaceWithoutTables: a keyspace left without tables, by an apply that
// stopped after creating it or by an older release that created it with a replication the
// cluster cannot hold, is completed by the next apply.
func TestApplyCompletesAKeyspaceWithoutTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	session, ks := bareSession(t)
	rf := nodes(t, session) + 1
	testnode.SchemaChange(t, session, fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}`, ks, rf))

	require.NoError(t, testnode.Migrate(t, session, schema.WithKeyspace(ks)))
	r, err := schema.Status(ctx, session, schema.WithKeyspace(ks))
	require.NoError(t, err)
	assert.Empty(t, r.Pending())
	assert.NoError(t, r.Err())
	assert.Equal(t, len(documentedTTL), r.Tables)
	var repl map[string]string
	require.NoError(t, session.Query(`SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`, ks).Scan(&repl))
	assert.Equal(t, "1", repl["replication_factor"], "the replication the cluster can hold")
}

// The TTLs the CQL files document; a change to a file's TTL must change this table too.
var documentedTTL = map[string]int{
	"idempotency_keys":             86400,
	"processed_messages":           7 * 86400,
	"processed_messages_by_scope":  7 * 86400,
	"counter_events":               0,
	"counter_rollups":              0,
	"counter_buckets":              0,
	"counter_window_events":        604984,
	"counter_windows":              604984,
	"counter_late_claims":          604984,
	"counter_late_slices":          604984,
	"counter_ops":                  7 * 86400,
	"processed_messages_bucketed":  7 * 86400,
	"counter_ops_by_hour":          7 * 86400,
	"counter_values":               0,
	"outbox_intents":               49 * 3600,
	"outbox_arrivals":              3 * 3600,
	"outbox_relays":                0,
	"outbox_layout":                0,
	"outbox_parked":                0,
	"guard_layouts":                0,
	"processed_messages_by_window": 7 * 86400,
	"scope_owners":                 7 * 86400,
	schema.MigrationsTable:         0,
}

func TestTablesExistWithDocumentedTTLs(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	got := map[string]int{}
	iter := session.Query(`SELECT table_name, default_time_to_live FROM system_schema.tables WHERE keyspace_name = ?`, ks).Iter()
	var name string
	var ttl int
	for iter.Scan(&name, &ttl) {
		got[name] = ttl
	}
	require.NoError(t, iter.Close())
	assert.Equal(t, documentedTTL, got)
}

func TestConditionalInsertTreatsExpiredRowAsAbsent(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	insert := func() bool {
		m := map[string]interface{}{}
		applied, err := session.Query(`INSERT INTO idempotency_keys (namespace, key, status) VALUES ('ns', 'k', 'STARTED') IF NOT EXISTS USING TTL 1`).MapScanCAS(m)
		require.NoError(t, err)
		return applied
	}
	require.True(t, insert(), "first claim applies")
	require.False(t, insert(), "a live row blocks the second claim")
	require.Eventually(t, func() bool {
		n := 0
		require.NoError(t, session.Query(`SELECT count(*) FROM idempotency_keys WHERE namespace = 'ns' AND key = 'k'`).Scan(&n))
		return n == 0
	}, 10*time.Second, 250*time.Millisecond, "the row expires after its TTL")
	assert.True(t, insert(), "IF NOT EXISTS sees an expired row as absent")
}

func TestNodeRunsPaxosV2(t *testing.T) {
	t.Parallel()
	session, _ := testnode.NewSession(t)
	var variant string
	err := session.Query(`SELECT value FROM system_views.settings WHERE name = 'paxos_variant'`).Scan(&variant)
	require.NoError(t, err)
	assert.Equal(t, "v2", variant, "the test node must run paxos_variant v2 (scripts/cassandra, docker-compose.yml)")
}

// TestCQLFilesRunWithCqlsh feeds every file, exactly as written, to the real CQL shell.
func TestCQLFilesRunWithCqlsh(t *testing.T) {
	cqlsh := os.Getenv("CQLSH")
	if cqlsh == "" {
		var err error
		if cqlsh, err = exec.LookPath("cqlsh"); err != nil {
			t.Fatal("cqlsh not found: `pip install cqlsh` or set CQLSH (make test installs it)")
		}
	}
	hosts, err := testnode.Hosts()
	require.NoError(t, err)
	host, port := splitHostPort(hosts[0])

	cluster := testnode.Cluster(t)
	session, err := cluster.CreateSession()
	require.NoError(t, err)
	defer session.Close()
	// The files create the default keyspace; drop it afterwards only if this test created it,
	// so running the tests against a cluster that uses cassdedup for real leaves it alone.
	existed := keyspaceExists(t, session, schema.DefaultKeyspace)
	if !existed {
		t.Cleanup(func() {
			_ = session.Query(`DROP KEYSPACE IF EXISTS ` + schema.DefaultKeyspace).Exec()
		})
	}

	files, err := filepath.Glob("cql/*.cql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		out, err := exec.Command(cqlsh, host, port, "--request-timeout=60", "-f", f).CombinedOutput()
		require.NoError(t, err, "%s: %s", f, out)
		// cqlsh -f reports statement errors on stderr but still exits 0 for some of them.
		assert.NotContains(t, strings.ToLower(string(out)), "error", "%s: %s", f, out)
	}
	assert.True(t, keyspaceExists(t, session, schema.DefaultKeyspace))
}

func keyspaceExists(t *testing.T, s *gocql.Session, ks string) bool {
	var name string
	err := s.Query(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, ks).Scan(&name)
	if errors.Is(err, gocql.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

func splitHostPort(h string) (string, string) {
	if i := strings.LastIndex(h, ":"); i > 0 {
		return h[:i], h[i+1:]
	}
	return h, "9042"
}
