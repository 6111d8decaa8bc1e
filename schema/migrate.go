package schema

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/enumname"
)

// MigrationsTable is the table, in the schema's keyspace, in which Migrate records every
// version it applied: its number, file name, checksum and when it was applied.
const MigrationsTable = "schema_migrations"

// createMigrationsTable is the record table's CQL; %s is the quoted keyspace. It holds one small
// row per migration file and is neither TTL'd nor deleted from, so the defaults fit it.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS %s.` + MigrationsTable + ` (
    version    int PRIMARY KEY,
    name       text,
    checksum   text,
    applied_at timestamp
)`

// MigrationState says where a migration stands in one keyspace.
type MigrationState int

// The states of a migration.
const (
	Pending MigrationState = iota + 1 // not recorded: Migrate will apply it
	Applied                           // recorded with the checksum the file has now
	Changed                           // recorded with another checksum: the file changed after it ran
	Unknown                           // recorded, but no file has its version (a newer release applied it)
)

var stateNames = [...]string{"", "pending", "applied", "changed", "unknown"}

// String names the state in lower case.
func (s MigrationState) String() string {
	return enumname.Of(s, "MigrationState", stateNames[:]...)
}

// MigrationStatus is one migration's state in a keyspace.
type MigrationStatus struct {
	Version         int
	Name            string // the file's name; the recorded name for an Unknown migration
	State           MigrationState
	Checksum        string    // the file's checksum; empty for an Unknown migration
	AppliedChecksum string    // the checksum recorded when it was applied; empty when pending
	AppliedAt       time.Time // zero when pending
}

// Report is the state of the schema in one keyspace.
type Report struct {
	Keyspace       string
	KeyspaceExists bool
	// Versioned reports whether the keyspace has the migrations table. A keyspace with the
	// toolkit's tables but without it was installed before migrations were recorded; Migrate
	// adopts it, applying every file (each statement is idempotent) and recording them.
	Versioned bool
	// Tables counts the tables in the keyspace, the migrations table included.
	Tables     int
	Migrations []MigrationStatus // in version order, Unknown ones included
	// Drift lists the tables and columns that the recorded migrations create and the live
	// schema lacks; Migrate creates them again.
	Drift []Drift

	repair []string // the statements that create what Drift lists
}

// Pending returns the migrations Migrate would apply.
func (r Report) Pending() []MigrationStatus { return r.filter(Pending) }

// Changed returns the applied migrations whose files changed since.
func (r Report) Changed() []MigrationStatus { return r.filter(Changed) }

func (r Report) filter(s MigrationState) []MigrationStatus {
	var out []MigrationStatus
	for _, m := range r.Migrations {
		if m.State == s {
			out = append(out, m)
		}
	}
	return out
}

// Status reads which migrations the keyspace of the options has recorded and compares them
// with the embedded files, and compares the live tables and columns (system_schema) with what
// the recorded migrations create. It changes nothing; Report.Err says whether the keyspace
// is in the state its records describe.
func Status(ctx context.Context, session *gocql.Session, opts ...Option) (Report, error) {
	c, ms, err := prepare(session, opts)
	if err != nil {
		return Report{}, err
	}
	return status(ctx, session, c.keyspace, ms)
}

func status(ctx context.Context, session *gocql.Session, keyspace string, ms []Migration) (Report, error) {
	r := Report{Keyspace: keyspace}
	tables, exists, err := listTables(ctx, session, keyspace)
	if err != nil {
		return r, err
	}
	r.KeyspaceExists, r.Tables = exists, len(tables)
	for _, t := range tables {
		r.Versioned = r.Versioned || t == MigrationsTable
	}
	recorded := map[int]MigrationStatus{}
	if r.Versioned {
		if recorded, err = readRecords(ctx, session, keyspace); err != nil {
			return r, err
		}
	}
	for _, m := range ms {
		st := MigrationStatus{Version: m.Version, Name: m.Name, Checksum: m.Checksum, State: Pending}
		if rec, ok := recorded[m.Version]; ok {
			st.AppliedChecksum, st.AppliedAt, st.State = rec.AppliedChecksum, rec.AppliedAt, Applied
			if rec.AppliedChecksum != m.Checksum {
				st.State = Changed
			}
		}
		r.Migrations = append(r.Migrations, st)
	}
	var applied []Migration
	for _, m := range ms {
		if _, ok := recorded[m.Version]; ok {
			applied = append(applied, m)
			delete(recorded, m.Version)
		}
	}
	for _, rec := range recorded {
		rec.State = Unknown
		r.Migrations = append(r.Migrations, rec)
	}
	sort.Slice(r.Migrations, func(i, j int) bool { return r.Migrations[i].Version < r.Migrations[j].Version })
	if len(applied) > 0 {
		if r.Drift, r.repair, err = findDrift(ctx, session, keyspace, applied); err != nil {
			return r, err
		}
	}
	return r, nil
}

// listTables returns the tables of keyspace and whether the keyspace exists.
func listTables(ctx context.Context, session *gocql.Session, keyspace string) ([]string, bool, error) {
	var name string
	iter := session.Query(`SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, keyspace).
		WithContext(ctx).Iter()
	exists := iter.Scan(&name)
	if err := iter.Close(); err != nil {
		return nil, false, fmt.Errorf("schema: read keyspace %s: %w", keyspace, err)
	}
	if !exists {
		return nil, false, nil
	}
	var tables []string
	iter = session.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, keyspace).
		WithContext(ctx).Iter()
	for iter.Scan(&name) {
		tables = append(tables, name)
	}
	if err := iter.Close(); err != nil {
		return nil, true, fmt.Errorf("schema: list tables of %s: %w", keyspace, err)
	}
	return tables, true, nil
}

// readRecords reads the migrations table of keyspace: a few rows, read whole.
func readRecords(ctx context.Context, session *gocql.Session, keyspace string) (map[int]MigrationStatus, error) {
	table, err := QualifiedName(keyspace, MigrationsTable)
	if err != nil {
		return nil, err
	}
	out := map[int]MigrationStatus{}
	iter := session.Query(`SELECT version, name, checksum, applied_at FROM ` + table).WithContext(ctx).Iter()
	var st MigrationStatus
	for iter.Scan(&st.Version, &st.Name, &st.AppliedChecksum, &st.AppliedAt) {
		out[st.Version] = st
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("schema: read %s: %w", table, err)
	}
	return out, nil
}

// Migrate applies the embedded migrations that the keyspace of the options has not recorded,
// in version order, and records each one once its statements ran; it returns those it applied.
// It waits for schema agreement after every statement, so the next one (and the caller's
// first query) sees it. A keyspace installed before migrations were recorded is adopted: every
// statement of the files is idempotent (CREATE ... IF NOT EXISTS, ALTER ... ADD IF NOT EXISTS),
// so applying them upgrades it in place and leaves its data alone. A keyspace without tables
// (a new install) gets each table in its final form at once, the columns later migrations add
// folded into its CREATE TABLE, and every migration recorded: the same schema in about half the
// schema changes.
//
// Before it changes anything, Migrate refuses: a keyspace that records a migration this binary
// does not know (a *NewerSchemaError, ErrNewerSchema); an applied migration whose file
// changed since (ErrMigrationChanged); and a keyspace to create with a replication the
// cluster's nodes cannot hold (ErrReplicationUnavailable: RF 3 on one node). A keyspace that
// exists without tables is completed: if its replication cannot be held (an earlier apply
// created it so) and the requested one can, its replication is changed to the requested one
// first, which is safe as it holds no data. Then Migrate creates again what the recorded
// migrations created and the live schema lacks (Report.Drift), with the files' own idempotent
// statements, and applies the pending migrations.
//
// A nil session is ErrInvalidOption and bad options fail as Statements documents. A
// migration interrupted midway is not recorded and runs again, whole, next time. Run one
// Migrate at a time per keyspace: concurrent schema changes of one table can disagree.
func Migrate(ctx context.Context, session *gocql.Session, opts ...Option) ([]MigrationStatus, error) {
	c, p, err := plan(ctx, session, opts)
	if err != nil {
		return nil, err
	}
	if err := runStatements(ctx, session, c, p.Prepare); err != nil {
		return nil, err
	}
	if !p.Report.Versioned && p.Report.Tables == 0 {
		return install(ctx, session, c, p.Pending)
	}
	versioned := p.Report.Versioned
	var done []MigrationStatus
	for _, m := range p.Pending {
		if err := runStatements(ctx, session, c, m.Statements); err != nil {
			return done, fmt.Errorf("schema: migration %s: %w", m.Name, err)
		}
		if !versioned {
			// The keyspace exists now (000 creates it), so the record table can.
			if err := runStatements(ctx, session, c, []string{migrationsTableCQL(c.keyspace)}); err != nil {
				return done, err
			}
			versioned = true
		}
		st, err := record(ctx, session, c.keyspace, m)
		if err != nil {
			return done, err
		}
		done = append(done, st)
	}
	return done, nil
}

// install brings a keyspace without tables to the schema of ms in one pass: their statements
// folded (see folded), then the record table and a record for each. Interrupted, it leaves
// tables without records, and the next Migrate adopts them as an unversioned install: it runs
// every migration's idempotent statements as written and records them.
func install(ctx context.Context, session *gocql.Session, c config, ms []Migration) ([]MigrationStatus, error) {
	if err := runStatements(ctx, session, c, append(folded(ms), migrationsTableCQL(c.keyspace))); err != nil {
		return nil, err
	}
	done := make([]MigrationStatus, 0, len(ms))
	for _, m := range ms {
		st, err := record(ctx, session, c.keyspace, m)
		if err != nil {
			return done, err
		}
		done = append(done, st)
	}
	return done, nil
}

// Plan is what Migrate would do to a keyspace, as PlanMigration found it.
type Plan struct {
	Report Report
	// Prepare are the statements Migrate runs before the pending migrations: a replication
	// change for a keyspace without tables whose replication the cluster cannot hold, and
	// the statements that create again what Report.Drift lists.
	Prepare []string
	// Pending are the migrations Migrate would apply and record, in order.
	Pending []Migration
}

// PlanMigration reads the keyspace of the options and returns what Migrate would do, or the
// error with which it would refuse, without changing anything: a dry run of Migrate.
func PlanMigration(ctx context.Context, session *gocql.Session, opts ...Option) (Plan, error) {
	_, p, err := plan(ctx, session, opts)
	return p, err
}

// plan validates the arguments, reads the keyspace and checks everything Migrate checks
// before it changes anything.
func plan(ctx context.Context, session *gocql.Session, opts []Option) (config, Plan, error) {
	c, ms, err := prepare(session, opts)
	if err != nil {
		return c, Plan{}, err
	}
	r, err := status(ctx, session, c.keyspace, ms)
	if err != nil {
		return c, Plan{}, err
	}
	p := Plan{Report: r}
	if err := r.refusal(); err != nil {
		return c, p, err
	}
	alter, err := replicationPlan(ctx, session, c, r)
	if err != nil {
		return c, p, err
	}
	p.Prepare = append(alter, r.repair...)
	pending := map[int]bool{}
	for _, m := range r.Pending() {
		pending[m.Version] = true
	}
	for _, m := range ms {
		if pending[m.Version] {
			p.Pending = append(p.Pending, m)
		}
	}
	return c, p, nil
}

// prepare validates the arguments of Status and Migrate before anything is read or run.
func prepare(session *gocql.Session, opts []Option) (config, []Migration, error) {
	if session == nil {
		return config{}, nil, fmt.Errorf("%w: nil session", ErrInvalidOption)
	}
	c, err := newConfig(opts)
	if err != nil {
		return c, nil, err
	}
	ms, err := c.migrations(Files())
	return c, ms, err
}

// migrationsTableCQL is the record table's statement for keyspace, validated by Migrations.
func migrationsTableCQL(keyspace string) string {
	ks, _ := QuoteIdentifier(keyspace)
	return fmt.Sprintf(createMigrationsTable, ks)
}

// MigrationsTableStatement returns the statement with which Migrate creates the migrations
// table in the keyspace of the options, right after the migration that creates the keyspace.
func MigrationsTableStatement(opts ...Option) (string, error) {
	c, err := newConfig(opts)
	if err != nil {
		return "", err
	}
	if err := ValidateIdentifier(c.keyspace); err != nil {
		return "", fmt.Errorf("keyspace: %w", err)
	}
	return migrationsTableCQL(c.keyspace), nil
}

func runStatements(ctx context.Context, session *gocql.Session, c config, stmts []string) error {
	for _, stmt := range stmts {
		if err := session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("schema: apply %q: %w", firstLine(stmt), err)
		}
		if err := awaitAgreement(ctx, session, c.agreementTimeout); err != nil {
			return err
		}
	}
	return nil
}

// record writes m's row in the migrations table. A plain write: two appliers recording the
// same version write the same name and checksum.
func record(ctx context.Context, session *gocql.Session, keyspace string, m Migration) (MigrationStatus, error) {
	table, err := QualifiedName(keyspace, MigrationsTable)
	if err != nil {
		return MigrationStatus{}, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	err = session.Query(`INSERT INTO `+table+` (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`,
		m.Version, m.Name, m.Checksum, now).WithContext(ctx).Exec()
	if err != nil {
		return MigrationStatus{}, fmt.Errorf("schema: record migration %s: %w", m.Name, err)
	}
	return MigrationStatus{Version: m.Version, Name: m.Name, State: Applied, Checksum: m.Checksum,
		AppliedChecksum: m.Checksum, AppliedAt: now}, nil
}

// replicationPlan checks, before the keyspace is created, that the cluster's nodes can hold
// the replication asked for, and returns the statement that gives a keyspace an earlier apply
// created without tables, with a replication the cluster cannot hold, the one asked for.
func replicationPlan(ctx context.Context, session *gocql.Session, c config, r Report) ([]string, error) {
	if r.KeyspaceExists && r.Tables > 0 {
		return nil, nil // its replication is its operators' choice, and it holds data
	}
	nodes, err := nodesPerDatacenter(ctx, session)
	if err != nil {
		return nil, err
	}
	wanted := c.replication.fits(nodes)
	if !r.KeyspaceExists {
		if wanted != nil {
			return nil, fmt.Errorf("keyspace %s not created: %w", c.keyspace, wanted)
		}
		return nil, nil
	}
	existing, err := keyspaceReplication(ctx, session, c.keyspace)
	if err != nil {
		return nil, err
	}
	if existing.fits(nodes) == nil {
		return nil, nil
	}
	if wanted != nil {
		return nil, fmt.Errorf("keyspace %s exists without tables and with replication %s: %w", c.keyspace, existing, wanted)
	}
	ks, _ := QuoteIdentifier(c.keyspace)
	return []string{fmt.Sprintf("ALTER KEYSPACE %s WITH replication = %s", ks, c.replication)}, nil
}
