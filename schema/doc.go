// Package schema holds cassdedup's CQL schema and applies it as versioned migrations: call
// [Apply](ctx, session, opts...) to create or upgrade a keyspace, [Status] to compare it with the
// files, and [Statements] to review the CQL first.
//
// The CQL files under cql/ are the single source of the data model: each is valid for
// `cqlsh -f` as written and creates its tables in the default keyspace "cassdedup". Each file is
// one migration, numbered by its name (001_idempotency_keys.cql is version 1). Apply and Migrate
// run the same files, embedded in the binary, against any keyspace name and replication, and
// record every version they applied, with the file's checksum and the time, in the keyspace's
// schema_migrations table; Status compares those records with the files and flags a file that
// changed after it was applied. Every statement is idempotent (CREATE ... IF NOT EXISTS,
// ALTER TABLE ... ADD IF NOT EXISTS, ALTER TABLE ... WITH a table option), so an install made before versions were recorded is
// adopted and upgraded in place. A change to the schema is a new numbered file, never an edit of
// an applied one.
//
// Status also compares the live tables and columns (system_schema) with what the recorded
// migrations create (Report.Drift), and Migrate creates again what is missing with the files'
// own statements. Before it changes anything, Migrate refuses a keyspace that records a
// migration this binary does not know (ErrNewerSchema) and a replication the cluster's nodes
// cannot hold (ErrReplicationUnavailable); PlanMigration is its dry run.
//
// Keyspace and table names come from configuration, so every package of the toolkit validates
// them with ValidateIdentifier and quotes them with QuoteIdentifier before they reach CQL; values
// are always bound, never formatted into a statement.
//
// The functions of this package are safe for concurrent use; run one Migrate at a time per
// keyspace.
package schema
