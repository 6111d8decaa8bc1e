package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gocql/gocql"
)

// ErrDrift is returned by Report.Err when a table or column that an applied migration creates
// is missing from the live schema (dropped by hand, or lost with a restored node). Migrate
// creates it again.
var ErrDrift = errors.New("schema: the live schema lacks what applied migrations create")

// ErrNewerSchema is returned by Migrate, and by Report.Err, when the keyspace records a
// migration that this binary does not have: a newer release applied it, and this one would
// work against a schema it does not know. The error is a *NewerSchemaError.
var ErrNewerSchema = errors.New("schema: the keyspace has a migration this binary does not know")

// NewerSchemaError names the migration a newer release recorded and the last one this binary
// knows. It wraps ErrNewerSchema.
type NewerSchemaError struct {
	Keyspace string
	Recorded MigrationStatus // the highest recorded version this binary has no file for
	Known    int             // the highest version this binary has
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("schema: keyspace %s records migration %d (%q), which this binary does not know (it knows versions up to %d): use the release that applied it, or a newer one",
		e.Keyspace, e.Recorded.Version, e.Recorded.Name, e.Known)
}

// Unwrap returns ErrNewerSchema.
func (e *NewerSchemaError) Unwrap() error { return ErrNewerSchema }

// Drift is a table or column that an applied migration creates and the live schema lacks.
type Drift struct {
	Table     string
	Column    string // empty when the whole table is missing
	Migration string // the file that creates it
}

// String says what is missing: "table counter_ops (004_counter_dedup.cql)".
func (d Drift) String() string {
	if d.Column == "" {
		return fmt.Sprintf("table %s is missing (created by %s)", d.Table, d.Migration)
	}
	return fmt.Sprintf("column %s.%s is missing (added by %s)", d.Table, d.Column, d.Migration)
}

// Err reports the first reason the report's keyspace is not in the state its migrations
// describe: a *NewerSchemaError, ErrMigrationChanged, or ErrDrift naming what is missing; nil
// when it is (pending migrations are not an error: Migrate applies them).
func (r Report) Err() error {
	if err := r.refusal(); err != nil {
		return err
	}
	if len(r.Drift) > 0 {
		what := make([]string, len(r.Drift))
		for i, d := range r.Drift {
			what[i] = d.String()
		}
		return fmt.Errorf("%w: %s", ErrDrift, strings.Join(what, "; "))
	}
	return nil
}

// refusal is the part of Err that Migrate cannot repair.
func (r Report) refusal() error {
	var newer *MigrationStatus
	known := -1
	for i, m := range r.Migrations {
		if m.State == Unknown {
			newer = &r.Migrations[i]
		} else {
			known = max(known, m.Version)
		}
	}
	if newer != nil {
		return &NewerSchemaError{Keyspace: r.Keyspace, Recorded: *newer, Known: known}
	}
	if changed := r.Changed(); len(changed) > 0 {
		names := make([]string, len(changed))
		for i, m := range changed {
			names[i] = m.Name
		}
		return fmt.Errorf("%w: %s (recorded with another checksum; add a new numbered file instead)",
			ErrMigrationChanged, strings.Join(names, ", "))
	}
	return nil
}

// findDrift compares the live tables and columns of keyspace with what the recorded
// migrations of ms create, and returns what is missing with the statements that create it
// again: the table's own CREATE TABLE ... IF NOT EXISTS, and ALTER TABLE ... ADD IF NOT
// EXISTS for each column missing from an existing table or added after the table's creation.
// Each of them is idempotent and drops nothing.
func findDrift(ctx context.Context, session *gocql.Session, keyspace string, recorded []Migration) ([]Drift, []string, error) {
	live, err := listColumns(ctx, session, keyspace)
	if err != nil {
		return nil, nil, err
	}
	var (
		drift  []Drift
		repair []string
	)
	for _, t := range expectedTables(recorded) {
		cols, exists := live[t.name]
		if !exists {
			drift = append(drift, Drift{Table: t.name, Migration: t.migration})
			repair = append(repair, t.create)
			// Recreated from its CREATE, the table has that statement's columns.
			cols = map[string]bool{}
			if created := parseCreateTable(t.create, strings.Fields(t.create), t.migration); created != nil {
				for _, c := range created.columns {
					cols[c.name] = true
				}
			}
		}
		for _, c := range t.columns {
			if cols[c.name] {
				continue
			}
			if exists {
				drift = append(drift, Drift{Table: t.name, Column: c.name, Migration: c.createdBy})
			}
			name, err := QualifiedName(keyspace, t.name)
			if err != nil {
				return nil, nil, err
			}
			repair = append(repair, fmt.Sprintf("ALTER TABLE %s ADD IF NOT EXISTS %s %s", name, c.name, c.cqlType))
		}
	}
	return drift, repair, nil
}

// listColumns returns the columns of each table of keyspace.
func listColumns(ctx context.Context, session *gocql.Session, keyspace string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	var table, col string
	iter := session.Query(`SELECT table_name, column_name FROM system_schema.columns WHERE keyspace_name = ?`, keyspace).
		WithContext(ctx).Iter()
	for iter.Scan(&table, &col) {
		if out[table] == nil {
			out[table] = map[string]bool{}
		}
		out[table][col] = true
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("schema: list the columns of %s: %w", keyspace, err)
	}
	return out, nil
}
