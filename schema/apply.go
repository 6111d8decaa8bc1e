package schema

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

//go:embed cql/*.cql
var files embed.FS

// Files returns the embedded CQL files, named as in the repository's schema/cql folder.
func Files() fs.FS {
	sub, err := fs.Sub(files, "cql")
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder exists
	}
	return sub
}

// Option configures Apply and Statements.
type Option func(*config)

type config struct {
	keyspace         string
	replication      Replication
	agreementTimeout time.Duration
}

// WithKeyspace applies the schema to the named keyspace instead of DefaultKeyspace.
func WithKeyspace(name string) Option { return func(c *config) { c.keyspace = name } }

// WithReplication sets the replication of the keyspace when Apply creates it; an existing
// keyspace keeps its replication. The default is SimpleStrategy(1).
func WithReplication(r Replication) Option { return func(c *config) { c.replication = r } }

// WithAgreementTimeout bounds the wait for schema agreement after each statement (default 60s).
func WithAgreementTimeout(d time.Duration) Option {
	return func(c *config) { c.agreementTimeout = d }
}

func newConfig(opts []Option) config {
	c := config{keyspace: DefaultKeyspace, replication: SimpleStrategy(1), agreementTimeout: time.Minute}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Apply brings the keyspace of the options to the current schema: it creates the keyspace and
// every table of the toolkit if they do not exist and applies the migrations not yet recorded
// (see Migrate). Running it again is harmless.
func Apply(ctx context.Context, session *gocql.Session, opts ...Option) error {
	_, err := Migrate(ctx, session, opts...)
	return err
}

func awaitAgreement(ctx context.Context, session *gocql.Session, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := session.AwaitSchemaAgreement(ctx); err != nil {
		return fmt.Errorf("schema: await schema agreement: %w", err)
	}
	return nil
}

func firstLine(stmt string) string {
	line, _, _ := strings.Cut(stmt, "\n")
	return strings.TrimSpace(line)
}
