// Command cassdedup-schema applies cassdedup's CQL schema to a cluster, or prints it.
//
//	cassdedup-schema -hosts 10.0.0.1,10.0.0.2 -keyspace payments_dedup -dc dc1:3,dc2:3
//	cassdedup-schema -print -keyspace payments_dedup
//
// The statements are the ones in schema/cql, retargeted to the keyspace; applying twice is
// harmless.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cassdedup-schema:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cassdedup-schema", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	hosts := fs.String("hosts", envOr("CASSANDRA_HOSTS", "127.0.0.1:9042"), "comma-separated contact points")
	keyspace := fs.String("keyspace", schema.DefaultKeyspace, "keyspace to create the tables in")
	rf := fs.Int("rf", 1, "SimpleStrategy replication factor (ignored with -dc)")
	dcs := fs.String("dc", "", "NetworkTopologyStrategy replicas per datacenter, e.g. dc1:3,dc2:3")
	printOnly := fs.Bool("print", false, "print the statements instead of applying them")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	replication, err := parseReplication(*rf, *dcs)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	opts := []schema.Option{schema.WithKeyspace(*keyspace), schema.WithReplication(replication)}
	stmts, err := schema.Statements(opts...)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *printOnly {
		for _, s := range stmts {
			fmt.Fprintf(stdout, "%s;\n\n", s)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cluster := gocql.NewCluster(strings.Split(*hosts, ",")...)
	cluster.Consistency = gocql.Quorum
	cluster.Timeout = 30 * time.Second
	cluster.ConnectTimeout = 5 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *hosts, err)
	}
	defer session.Close()
	if err := schema.Apply(ctx, session, opts...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d statements to keyspace %s on %s\n", len(stmts), *keyspace, *hosts)
	return nil
}

func parseReplication(rf int, dcs string) (schema.Replication, error) {
	if dcs == "" {
		return schema.SimpleStrategy(rf), nil
	}
	per := map[string]int{}
	for _, part := range strings.Split(dcs, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil {
			return schema.Replication{}, fmt.Errorf("-dc wants name:replicas pairs, got %q", part)
		}
		per[name] = count
	}
	return schema.NetworkTopologyStrategy(per), nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
