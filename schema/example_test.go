package schema_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/schema"
)

// Check what a keyspace has applied before a deploy, then bring it up to date.
func ExampleMigrate() {
	session, err := gocql.NewCluster("127.0.0.1:9042").CreateSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	ctx := context.Background()
	opts := []schema.Option{schema.WithKeyspace("payments_dedup"),
		schema.WithReplication(schema.NetworkTopologyStrategy(map[string]int{"dc1": 3, "dc2": 3}))}
	report, err := schema.Status(ctx, session, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range report.Changed() {
		fmt.Println("changed since it was applied:", m.Name) // Migrate refuses to run
	}
	applied, err := schema.Migrate(ctx, session, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range applied {
		fmt.Println("applied", m.Name, m.AppliedAt)
	}
}

// A dry run before a deploy: what Migrate would repair and apply, or why it would refuse.
func ExamplePlanMigration() {
	session, err := gocql.NewCluster("127.0.0.1:9042").CreateSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	plan, err := schema.PlanMigration(context.Background(), session, schema.WithKeyspace("payments_dedup"))
	var newer *schema.NewerSchemaError
	switch {
	case errors.As(err, &newer):
		fmt.Println("a newer release migrated it to version", newer.Recorded.Version)
		return
	case errors.Is(err, schema.ErrReplicationUnavailable):
		fmt.Println("the cluster cannot hold that replication:", err)
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	for _, d := range plan.Report.Drift {
		fmt.Println("would recreate:", d)
	}
	for _, m := range plan.Pending {
		fmt.Println("would apply:", m.Name)
	}
}
