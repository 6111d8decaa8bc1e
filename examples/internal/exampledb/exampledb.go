// Package exampledb connects the example programs to Cassandra and applies the schema, so each
// example's own code shows only the toolkit.
package exampledb

import (
	"context"
	"flag"
	"fmt"
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
	hosts := flag.String("hosts", envOr("CASSANDRA_HOSTS", "127.0.0.1:9042"), "Cassandra contact points")
	keyspace := flag.String("keyspace", "cassdedup_examples", "keyspace (created if missing)")
	flag.Parse()
	if err := connectAndRun(*hosts, *keyspace, run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func connectAndRun(hosts, keyspace string, run func(context.Context, *gocql.Session, string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The recommended session: among its settings, no driver retries (an LWT or a counter
	// update must never be re-sent by the driver) and no write-coalescing wait.
	cluster, err := cqlsession.NewCluster(strings.Split(hosts, ","))
	if err != nil {
		return err
	}
	session, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", hosts, err)
	}
	defer session.Close()
	if err := schema.Apply(ctx, session, schema.WithKeyspace(keyspace)); err != nil {
		return err
	}
	return run(ctx, session, keyspace)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
