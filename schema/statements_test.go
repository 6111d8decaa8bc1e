package schema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitStatementsHandlesCommentsAndLiterals(t *testing.T) {
	src := `-- leading comment; with a semicolon
CREATE TABLE cassdedup.t (a text) WITH comment = 'it''s; -- not a comment'; // trailing
/* block; comment */ INSERT INTO cassdedup.t (a) VALUES ('cassdedup.x');
SELECT * FROM "cassdedup".mycassdedup.t;`
	got, err := splitStatements(src, "cassdedup", `"other"`)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, `CREATE TABLE "other".t (a text) WITH comment = 'it''s; -- not a comment'`, got[0])
	assert.Equal(t, `INSERT INTO "other".t (a) VALUES ('cassdedup.x')`, got[1])
	// A quoted identifier and a longer word that merely ends in the keyspace name stay as they are.
	assert.Equal(t, `SELECT * FROM "cassdedup".mycassdedup.t`, got[2])
}

func TestSplitStatementsRejectsUnterminatedInput(t *testing.T) {
	for _, src := range []string{`SELECT 'open`, `SELECT "open`, `SELECT 1 /* open`} {
		_, err := splitStatements(src, "cassdedup", "x")
		assert.ErrorIs(t, err, ErrMalformedCQL, src)
	}
}

func TestStatementsRetargetEveryTable(t *testing.T) {
	stmts, err := Statements(WithKeyspace("tenant_a"), WithReplication(NetworkTopologyStrategy(map[string]int{"dc1": 3, "dc2": 3})))
	require.NoError(t, err)
	require.NotEmpty(t, stmts)
	assert.Equal(t, `CREATE KEYSPACE IF NOT EXISTS "tenant_a" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}`, stmts[0])
	for _, s := range stmts[1:] {
		assert.True(t, strings.HasPrefix(s, `CREATE TABLE IF NOT EXISTS "tenant_a".`) ||
			strings.HasPrefix(s, `ALTER TABLE "tenant_a".`) && (strings.Contains(s, " ADD IF NOT EXISTS ") || strings.Contains(s, " WITH ")), s)
		assert.NotContains(t, s, "cassdedup.")
	}
}

func TestStatementsRejectBadKeyspaceAndReplication(t *testing.T) {
	for _, name := range []string{"", "1abc", "has-dash", "x; DROP KEYSPACE y", `quo"te`, strings.Repeat("a", 49), "ünïcode"} {
		_, err := Statements(WithKeyspace(name))
		assert.ErrorIs(t, err, ErrInvalidIdentifier, name)
	}
	bad := []Replication{
		{},
		SimpleStrategy(0),
		NetworkTopologyStrategy(nil),
		NetworkTopologyStrategy(map[string]int{"dc'1": 3}),
		NetworkTopologyStrategy(map[string]int{"dc1": 33}),
	}
	for _, r := range bad {
		_, err := Statements(WithReplication(r))
		assert.ErrorIs(t, err, ErrInvalidReplication, "%+v", r)
	}
}

func TestStatementsRejectBadOptions(t *testing.T) {
	for _, opts := range [][]Option{{nil}, {WithAgreementTimeout(0)}, {WithAgreementTimeout(-time.Nanosecond)}} {
		_, err := Statements(opts...)
		assert.ErrorIs(t, err, ErrInvalidOption)
	}
	_, err := Statements(WithReplication(NetworkTopologyStrategy(map[string]int{"dc 1": 3})))
	assert.ErrorIs(t, err, ErrInvalidReplication, "a datacenter name is not an identifier")
	assert.NotErrorIs(t, err, ErrInvalidIdentifier)
}

func TestQualifiedNameNamesTheBadPart(t *testing.T) {
	_, err := QualifiedName("ok", "bad table")
	require.ErrorIs(t, err, ErrInvalidIdentifier)
	assert.Contains(t, err.Error(), "table")
	q, err := QualifiedName("Ks", "t_1")
	require.NoError(t, err)
	assert.Equal(t, `"Ks"."t_1"`, q)
}

func FuzzSplitStatements(f *testing.F) {
	f.Add("CREATE TABLE cassdedup.t (a int); -- x\nSELECT 'a;b' FROM cassdedup.t;")
	f.Add("/* x */ 'it''s' \"q\"\"q\" ; ;")
	f.Add("'")
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := splitStatements(src, "cassdedup", `"k"`)
		if err != nil {
			if !errors.Is(err, ErrMalformedCQL) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, s := range stmts {
			if s == "" || s != strings.TrimSpace(s) {
				t.Fatalf("statement %q not trimmed or empty", s)
			}
		}
	})
}

func FuzzValidateIdentifier(f *testing.F) {
	for _, s := range []string{"cassdedup", "", "a", "A_1", "1a", "a-b", `a"b`, strings.Repeat("x", 48)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		q, err := QuoteIdentifier(name)
		if err != nil {
			if !errors.Is(err, ErrInvalidIdentifier) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever passes must be safe to splice between double quotes.
		if strings.ContainsAny(name, "\"';. \n") || len(name) > 48 || q != `"`+name+`"` {
			t.Fatalf("accepted unsafe identifier %q", name)
		}
	})
}

// FuzzReplicationOptions: a replication and an agreement timeout are either refused with the
// sentinel their docs name, or rendered into a CREATE KEYSPACE that carries exactly them.
func FuzzReplicationOptions(f *testing.F) {
	f.Add("dc1", 3, int64(time.Minute))
	f.Add("us-east-1.a", 1, int64(1))
	f.Add("dc'1", 3, int64(time.Second))
	f.Add("dc1", 0, int64(time.Second))
	f.Add("", 33, int64(0))
	f.Add("dc1", 3, int64(-1))
	f.Fuzz(func(t *testing.T, dc string, rf int, timeout int64) {
		stmts, err := Statements(WithKeyspace("k"), WithAgreementTimeout(time.Duration(timeout)),
			WithReplication(NetworkTopologyStrategy(map[string]int{dc: rf})))
		switch {
		case timeout <= 0:
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("timeout %d: got %v, want ErrInvalidOption", timeout, err)
			}
		case rf < 1 || rf > 32 || !datacenterPattern.MatchString(dc):
			if !errors.Is(err, ErrInvalidReplication) || errors.Is(err, ErrInvalidIdentifier) {
				t.Fatalf("dc %q rf %d: got %v, want ErrInvalidReplication alone", dc, rf, err)
			}
		case err != nil:
			t.Fatalf("dc %q rf %d timeout %d refused: %v", dc, rf, timeout, err)
		default:
			if strings.ContainsAny(dc, "'\"\\ ") {
				t.Fatalf("accepted unsafe datacenter name %q", dc)
			}
			want := fmt.Sprintf(`CREATE KEYSPACE IF NOT EXISTS "k" WITH replication = {'class': 'NetworkTopologyStrategy', '%s': %d}`, dc, rf)
			if stmts[0] != want {
				t.Fatalf("got %s, want %s", stmts[0], want)
			}
		}
	})
}

func FuzzMigrationFile(f *testing.F) {
	f.Add("001_idempotency_keys.cql", "CREATE TABLE cassdedup.t (a text PRIMARY KEY);")
	f.Add("keyspace.cql", "SELECT 1")
	f.Add("-1_x.cql", "")
	f.Add("007_x.cql", "SELECT 'open")
	f.Add("008_x.cql", "CREATE TABLE cassdedup.t (a text, PRIMARY KEY); ALTER TABLE cassdedup.t ADD (b int, c map<text, int>); ALTER TABLE t DROP IF EXISTS b; DROP TABLE IF EXISTS t")
	f.Fuzz(func(t *testing.T, name, src string) {
		version, err := versionOf(name)
		if err != nil {
			if !errors.Is(err, ErrMalformedCQL) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if version < 0 {
			t.Fatalf("negative version %d from %q", version, name)
		}
		m, err := parseMigration(name, version, src, `"k"`, "{}")
		if err != nil {
			if !errors.Is(err, ErrMalformedCQL) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		expectedTables([]Migration{m}) // reads any statement without panicking
		if len(m.Checksum) != 64 {
			t.Fatalf("checksum %q", m.Checksum)
		}
	})
}
