package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// ErrMigrationChanged is returned by Migrate when a file whose version is recorded as applied no
// longer has the checksum recorded with it: its statements changed after they ran, so the
// change would never reach the install. Put the change in a new numbered file instead.
var ErrMigrationChanged = errors.New("schema: applied migration changed")

// Migration is one numbered CQL file of schema/cql: a version of the schema, applied and
// recorded as a whole.
type Migration struct {
	Version int    // the file's number: 1 for 001_idempotency_keys.cql
	Name    string // the file name
	// Checksum is the hex SHA-256 of the file's statements as written (default keyspace),
	// with comments dropped and runs of white space made one space: a change to a comment or
	// to the layout does not change it, a change to any statement does.
	Checksum string
	// Statements are the file's statements retargeted to the keyspace of the options, in
	// order, without their semicolons.
	Statements []string
}

// Migrations returns the embedded migrations in version order, retargeted to the keyspace and
// replication of the options. It fails with ErrInvalidOption, ErrInvalidIdentifier,
// ErrInvalidReplication or ErrMalformedCQL.
func Migrations(opts ...Option) ([]Migration, error) { return MigrationsFrom(Files(), opts...) }

// MigrationsFrom is Migrations for other files: the NNN_name.cql files at the root of fsys,
// written like those of schema/cql (for example a copy of an earlier release's, to test an
// upgrade from it).
func MigrationsFrom(fsys fs.FS, opts ...Option) ([]Migration, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return c.migrations(fsys)
}

func (c config) migrations(fsys fs.FS) ([]Migration, error) {
	ks, err := QuoteIdentifier(c.keyspace)
	if err != nil {
		return nil, fmt.Errorf("keyspace: %w", err)
	}
	replication, err := c.replication.cql()
	if err != nil {
		return nil, err
	}
	return migrationsFrom(fsys, ks, replication)
}

// migrationsFrom reads the numbered .cql files at the root of fsys.
func migrationsFrom(fsys fs.FS, quotedKeyspace, replication string) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.cql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Migration
	seen := map[int]string{}
	for _, name := range names {
		version, err := versionOf(name)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[version]; dup {
			return nil, fmt.Errorf("%w: %s and %s share version %d", ErrMalformedCQL, prev, name, version)
		}
		seen[version] = name
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		m, err := parseMigration(name, version, string(src), quotedKeyspace, replication)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// versionOf reads the number before the first underscore of a file name such as
// 001_idempotency_keys.cql.
func versionOf(name string) (int, error) {
	num, _, ok := strings.Cut(name, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s: a migration file is named NNN_what.cql", ErrMalformedCQL, name)
	}
	return v, nil
}

func parseMigration(name string, version int, src, quotedKeyspace, replication string) (Migration, error) {
	asWritten, err := splitStatements(src, "", "")
	if err != nil {
		return Migration{}, fmt.Errorf("%s: %w", name, err)
	}
	stmts, err := splitStatements(src, DefaultKeyspace, quotedKeyspace)
	if err != nil {
		return Migration{}, fmt.Errorf("%s: %w", name, err)
	}
	for i, s := range stmts {
		if isCreateKeyspace(s) {
			stmts[i] = fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", quotedKeyspace, replication)
		}
	}
	return Migration{Version: version, Name: name, Checksum: checksum(asWritten), Statements: stmts}, nil
}

// checksum hashes statements with their white space normalised.
func checksum(stmts []string) string {
	h := sha256.New()
	for _, s := range stmts {
		h.Write([]byte(strings.Join(strings.Fields(s), " ")))
		h.Write([]byte{';', '\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Statements returns the schema's CQL statements in the order Apply runs them, with the
// keyspace renamed and its replication set from the options. It fails with
// ErrInvalidOption, ErrInvalidIdentifier, ErrInvalidReplication or ErrMalformedCQL.
func Statements(opts ...Option) ([]string, error) {
	ms, err := Migrations(opts...)
	if err != nil {
		return nil, err
	}
	return flatten(ms), nil
}

func flatten(ms []Migration) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Statements...)
	}
	return out
}

func isCreateKeyspace(stmt string) bool {
	fields := strings.Fields(strings.ToUpper(stmt))
	return len(fields) >= 2 && fields[0] == "CREATE" && fields[1] == "KEYSPACE"
}
