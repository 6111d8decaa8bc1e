package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cassdedup/cassdedup/schema"
)

// replicationFlags are the keyspace replication flags of schema apply and print.
type replicationFlags struct {
	rf  int
	dcs string
}

func (r *replicationFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.rf, "rf", 1, "SimpleStrategy replication factor, when the keyspace is created (ignored with -dc)")
	fs.StringVar(&r.dcs, "dc", "", "NetworkTopologyStrategy replicas per datacenter, e.g. dc1:3,dc2:3")
}

func (r *replicationFlags) options(keyspace string) ([]schema.Option, error) {
	repl := schema.SimpleStrategy(r.rf)
	if r.dcs != "" {
		per := map[string]int{}
		for _, part := range strings.Split(r.dcs, ",") {
			name, n, ok := strings.Cut(strings.TrimSpace(part), ":")
			count, err := strconv.Atoi(n)
			if !ok || err != nil {
				return nil, fmt.Errorf("%w: -dc wants name:replicas pairs, got %q", errUsage, part)
			}
			per[name] = count
		}
		repl = schema.NetworkTopologyStrategy(per)
	}
	return []schema.Option{schema.WithKeyspace(keyspace), schema.WithReplication(repl)}, nil
}

// migrationView is a migration's state as printed.
type migrationView struct {
	Version         int        `json:"version"`
	Name            string     `json:"name"`
	State           string     `json:"state"`
	Checksum        string     `json:"checksum,omitempty"`
	AppliedChecksum string     `json:"applied_checksum,omitempty"`
	AppliedAt       *time.Time `json:"applied_at,omitempty"`
}

func viewMigration(m schema.MigrationStatus) migrationView {
	v := migrationView{Version: m.Version, Name: m.Name, State: m.State.String(), Checksum: m.Checksum, AppliedChecksum: m.AppliedChecksum}
	if !m.AppliedAt.IsZero() {
		at := m.AppliedAt.UTC()
		v.AppliedAt = &at
	}
	return v
}

func short(sum string) string { return sum[:min(12, len(sum))] }

var schemaApplyCommand = &command{
	name: "schema apply",
	summary: "create the keyspace and tables, recreate what was dropped, and apply the migrations not yet recorded; " +
		"refuses a replication the cluster cannot hold and a keyspace a newer release migrated (-timeout defaults to 1m)",
	timeout: time.Minute,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var repl replicationFlags
		repl.register(fs)
		agreement := fs.Duration("agreement-timeout", time.Minute, "wait this long for schema agreement after each statement")
		dryRun := fs.Bool("dry-run", false, "print the statements apply would run, and change nothing")
		return func(ctx context.Context, e *env, _ []string) error {
			opts, err := repl.options(e.keyspace)
			if err != nil {
				return err
			}
			opts = append(opts, schema.WithAgreementTimeout(*agreement))
			p, err := schema.PlanMigration(ctx, e.session, opts...)
			if err != nil {
				return err
			}
			if *dryRun {
				return e.printPlan(p)
			}
			if !e.json {
				for _, d := range p.Report.Drift {
					fmt.Fprintln(e.stdout, "repair: "+escapeText(d.String()))
				}
			}
			done, err := schema.Migrate(ctx, e.session, opts...)
			views := make([]migrationView, len(done))
			for i, m := range done {
				views[i] = viewMigration(m)
			}
			if emitErr := e.emit(map[string]any{"keyspace": e.keyspace, "applied": views}, func(w io.Writer) {
				if len(done) == 0 && err == nil {
					fmt.Fprintf(w, "keyspace %s is up to date: nothing to apply\n", e.keyspace)
					return
				}
				row(w, "VERSION", "NAME", "CHECKSUM", "APPLIED AT")
				for _, m := range done {
					row(w, m.Version, m.Name, short(m.Checksum), stamp(m.AppliedAt))
				}
			}); emitErr != nil {
				return emitErr
			}
			return err
		}
	},
}

// printPlan prints what schema apply would do.
func (e *env) printPlan(p schema.Plan) error {
	pending := make([]migrationView, len(p.Pending))
	for i, m := range p.Pending {
		pending[i] = migrationView{Version: m.Version, Name: m.Name, State: schema.Pending.String(), Checksum: m.Checksum}
	}
	drift := driftTexts(p.Report)
	return e.emit(map[string]any{"keyspace": p.Report.Keyspace, "dry_run": true, "drift": drift, "prepare": p.Prepare, "pending": pending},
		func(w io.Writer) {
			for _, d := range drift {
				fmt.Fprintln(w, "would repair: "+d)
			}
			for _, s := range p.Prepare {
				fmt.Fprintf(w, "would run: %s\n", strings.Join(strings.Fields(s), " "))
			}
			for _, m := range p.Pending {
				fmt.Fprintf(w, "would apply: %s (version %d, %d statements)\n", m.Name, m.Version, len(m.Statements))
			}
			if len(p.Prepare) == 0 && len(p.Pending) == 0 {
				fmt.Fprintf(w, "keyspace %s is up to date: nothing to apply\n", p.Report.Keyspace)
			}
			fmt.Fprintln(w, "dry run: nothing changed")
		})
}

func driftTexts(r schema.Report) []string {
	out := []string{}
	for _, d := range r.Drift {
		out = append(out, d.String())
	}
	return out
}

var schemaPrintCommand = &command{
	name:    "schema print",
	summary: "print the statements schema apply runs, file by file, for review",
	offline: true,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var repl replicationFlags
		repl.register(fs)
		return func(_ context.Context, e *env, _ []string) error {
			opts, err := repl.options(e.keyspace)
			if err != nil {
				return err
			}
			ms, err := schema.Migrations(opts...)
			if err != nil {
				return err
			}
			record, err := schema.MigrationsTableStatement(opts...)
			if err != nil {
				return err
			}
			if e.json {
				type file struct {
					Version    int      `json:"version"`
					Name       string   `json:"name"`
					Checksum   string   `json:"checksum"`
					Statements []string `json:"statements"`
				}
				files := make([]file, len(ms))
				for i, m := range ms {
					files[i] = file{m.Version, m.Name, m.Checksum, m.Statements}
				}
				return e.emit(map[string]any{"migrations": files, "migrations_table": record}, nil)
			}
			for _, m := range ms {
				fmt.Fprintf(e.stdout, "-- %s (version %d, checksum %s)\n", m.Name, m.Version, short(m.Checksum))
				for _, s := range m.Statements {
					fmt.Fprintf(e.stdout, "%s;\n\n", s)
				}
				if m.Version == 0 {
					fmt.Fprintf(e.stdout, "-- where schema apply records each version it applied\n%s;\n\n", record)
				}
			}
			return nil
		}
	},
}

var schemaStatusCommand = &command{
	name:    "schema status",
	summary: "list the applied and pending migrations and compare the live tables with them; exit 1 on drift (a dropped table or column), a changed file or a newer release's migration",
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		return func(ctx context.Context, e *env, _ []string) error {
			r, err := schema.Status(ctx, e.session, schema.WithKeyspace(e.keyspace))
			if err != nil {
				return err
			}
			views := make([]migrationView, len(r.Migrations))
			for i, m := range r.Migrations {
				views[i] = viewMigration(m)
			}
			notes := statusNotes(r)
			drift := driftTexts(r)
			err = e.emit(map[string]any{"keyspace": r.Keyspace, "keyspace_exists": r.KeyspaceExists, "versioned": r.Versioned,
				"tables": r.Tables, "migrations": views, "drift": drift, "notes": notes}, func(w io.Writer) {
				fmt.Fprintf(w, "keyspace %s: %d migrations, %d pending, %d changed\n", r.Keyspace, len(r.Migrations), len(r.Pending()), len(r.Changed()))
				row(w, "VERSION", "NAME", "STATE", "APPLIED AT", "CHECKSUM")
				for _, m := range r.Migrations {
					sum := short(m.Checksum)
					if m.State == schema.Changed {
						sum += " (recorded " + short(m.AppliedChecksum) + ")"
					}
					row(w, m.Version, display(m.Name), m.State, stamp(m.AppliedAt), sum)
				}
				for _, d := range drift {
					fmt.Fprintln(w, "drift: "+d+"; schema apply creates it again")
				}
				for _, n := range notes {
					fmt.Fprintln(w, "note: "+n)
				}
			})
			if err != nil {
				return err
			}
			return r.Err()
		}
	},
}

func statusNotes(r schema.Report) []string {
	var notes []string
	switch {
	case !r.KeyspaceExists:
		notes = append(notes, "the keyspace does not exist; schema apply creates it")
	case !r.Versioned && r.Tables > 0:
		notes = append(notes, fmt.Sprintf("the keyspace has %d tables but no %s table: it was installed before migrations were recorded; schema apply adopts it in place", r.Tables, schema.MigrationsTable))
	}
	for _, m := range r.Migrations {
		if m.State == schema.Unknown {
			notes = append(notes, fmt.Sprintf("version %d (%s) was applied by a newer release than this command", m.Version, display(m.Name)))
		}
	}
	return notes
}
