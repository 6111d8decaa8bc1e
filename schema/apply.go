package schema

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/internal/optcheck"
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

// ErrInvalidOption is returned by Apply for a nil session, and by Apply and Statements for a
// nil Option or an option value outside its range.
var ErrInvalidOption = errors.New("schema: invalid option")

// Option configures Apply, Migrate and Statements. A bad one makes them fail, before anything is
// sent, with an error that names it.
type Option func(*config) error

type config struct {
	keyspace         string
	replication      Replication
	agreementTimeout time.Duration
}

// WithKeyspace applies the schema to the named keyspace instead of DefaultKeyspace. A name
// that is not a plain CQL identifier is ErrInvalidIdentifier.
func WithKeyspace(name string) Option {
	return optcheck.Set(ErrInvalidIdentifier, ValidateIdentifier(name) != nil, optcheck.Call("WithKeyspace", name),
		"not a plain CQL identifier", func(c *config) { c.keyspace = name })
}

// WithReplication sets the replication of the keyspace when Apply creates it; an existing
// keyspace keeps its replication. The default is SimpleStrategy(1). A replication that
// Cassandra would reject, a bad datacenter name included, is ErrInvalidReplication.
func WithReplication(r Replication) Option {
	_, err := r.cql()
	why := ""
	if err != nil {
		why = strings.TrimPrefix(err.Error(), ErrInvalidReplication.Error()+": ")
	}
	return optcheck.Set(ErrInvalidReplication, err != nil, optcheck.Call("WithReplication", r), why,
		func(c *config) { c.replication = r })
}

// WithAgreementTimeout bounds the wait for schema agreement after each statement (default
// 60s). It must be positive: a zero or negative timeout is ErrInvalidOption, returned before
// Apply runs any statement.
func WithAgreementTimeout(d time.Duration) Option {
	return optcheck.Set(ErrInvalidOption, d <= 0, optcheck.Call("WithAgreementTimeout", d), "not positive",
		func(c *config) { c.agreementTimeout = d })
}

// newConfig applies opts to the defaults and validates every setting, so a bad one is
// reported before Apply creates anything.
func newConfig(opts []Option) (config, error) {
	c := config{keyspace: DefaultKeyspace, replication: SimpleStrategy(1), agreementTimeout: time.Minute}
	err := optcheck.Apply(ErrInvalidOption, &c, opts)
	return c, err
}

// Apply brings the keyspace of the options to the current schema: it creates the keyspace and
// every table of the toolkit if they do not exist and applies the migrations not yet recorded
// (see Migrate). Running it again is harmless.
//
// A nil session is ErrInvalidOption; bad options fail as Statements documents. Both are
// reported before any statement runs, so bad arguments never leave a keyspace half made.
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
