// Package schema holds cassdedup's CQL schema and applies it.
//
// The CQL files under cql/ are the single source of the data model: each is valid for
// `cqlsh -f` as written and creates its tables in the default keyspace "cassdedup". Apply runs
// the same files, embedded in the binary, against any keyspace name and replication, and is
// idempotent: every statement is CREATE ... IF NOT EXISTS, so running it twice is safe.
//
// Keyspace and table names come from configuration, so every package of the toolkit validates
// them with ValidateIdentifier and quotes them with QuoteIdentifier before they reach CQL; values
// are always bound, never formatted into a statement.
//
// The functions of this package are safe for concurrent use.
package schema
