// Package exampledb connects the example programs to Cassandra and applies the schema, so each
// example's own code shows only the toolkit.
package exampledb

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/schema"
)

// Main parses -hosts and -keyspace, connects, applies the schema and calls run; on error it
// prints it prefixed with the program's name and exits 1.
func Main(name string, run func(ctx context.Context, session *gocql.Session, keyspace string) error) {
	hosts := flag.String("hosts", EnvOr("CASSANDRA_HOSTS", "127.0.0.1:9042"), "Cassandra contact points")
	keyspace := flag.String("keyspace", "cassdedup_examples", "keyspace (created if missing)")
	flag.Parse()
	if err := connectAndRun(*hosts, *keyspace, run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Print is Main for a run that reports to out (os.Stdout here) and returns a summary for its
// test.
func Print[T any](name string, run func(ctx context.Context, session *gocql.Session, keyspace string, out io.Writer) (T, error)) {
	Main(name, func(ctx context.Context, session *gocql.Session, keyspace string) error {
		_, err := run(ctx, session, keyspace, os.Stdout)
		return err
	})
}

func connectAndRun(hosts, keyspace string, run func(context.Context, *gocql.Session, string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session, err := Open(ctx, hosts, keyspace)
	if err != nil {
		return err
	}
	defer session.Close()
	return run(ctx, session, keyspace)
}

// Connect returns the recommended session on hosts (comma-separated contact points) with
// keyspace as its default ("" for none). Among its settings: no driver retries (an LWT or a
// counter update must never be re-sent by the driver) and no write-coalescing wait.
func Connect(hosts, keyspace string) (*gocql.Session, error) {
	cluster, err := cqlsession.NewCluster(strings.Split(hosts, ","))
	if err != nil {
		return nil, err
	}
	cluster.Keyspace = keyspace
	session, err := cluster.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", hosts, err)
	}
	return session, nil
}

// Open applies the schema to keyspace (creating it if missing) and returns a session whose
// default keyspace it is.
func Open(ctx context.Context, hosts, keyspace string) (*gocql.Session, error) {
	admin, err := Connect(hosts, "")
	if err != nil {
		return nil, err
	}
	err = schema.Apply(ctx, admin, schema.WithKeyspace(keyspace))
	admin.Close()
	if err != nil {
		return nil, err
	}
	return Connect(hosts, keyspace)
}

// EnvOr returns the environment variable name, or fallback when it is unset or empty.
func EnvOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
