package main

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/gocql/gocql"
)

// effectBuckets spreads one topic's effect rows over partitions of a few thousand rows each.
const effectBuckets = 16

// effects is the consumers' side effect in Cassandra: one row per message that took effect,
// written with the fencing token of the claim it ran under, and a counter of handler runs per
// consumer. A handler run twice (a claim taken over after its consumer died mid-poll) rewrites
// its row with the higher fence, so the rows count the messages that took effect and the
// counter counts the runs.
type effects struct {
	session  *gocql.Session
	keyspace string
}

func (e effects) create(ctx context.Context) error {
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS %s.kafka_example_effects (topic text, bucket int, message_id text, fence bigint,
			consumer text, PRIMARY KEY ((topic, bucket), message_id))`,
		`CREATE TABLE IF NOT EXISTS %s.kafka_example_runs (topic text, consumer text, runs counter,
			PRIMARY KEY ((topic), consumer))`,
	} {
		if err := e.session.Query(fmt.Sprintf(stmt, e.keyspace)).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("create effect tables: %w", err)
		}
	}
	return nil
}

func bucketOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % effectBuckets)
}

// apply is the side effect of one handler run.
func (e effects) apply(ctx context.Context, topic, id, consumer string, fence int64) error {
	if err := e.session.Query(fmt.Sprintf(`UPDATE %s.kafka_example_runs SET runs = runs + 1 WHERE topic = ? AND consumer = ?`, e.keyspace),
		topic, consumer).WithContext(ctx).Exec(); err != nil {
		return err
	}
	return e.session.Query(fmt.Sprintf(`INSERT INTO %s.kafka_example_effects (topic, bucket, message_id, fence, consumer) VALUES (?, ?, ?, ?, ?)`, e.keyspace),
		topic, bucketOf(id), id, fence, consumer).WithContext(ctx).Exec()
}

// tally counts the messages that took effect, those whose handler ran under a later claim
// (fence above 1), and the handler runs.
func (e effects) tally(ctx context.Context, topic string) (applied, rerun int, runs int64, err error) {
	for b := range effectBuckets {
		iter := e.session.Query(fmt.Sprintf(`SELECT fence FROM %s.kafka_example_effects WHERE topic = ? AND bucket = ?`, e.keyspace),
			topic, b).WithContext(ctx).PageSize(5000).Iter()
		var fence int64
		for iter.Scan(&fence) {
			applied++
			if fence > 1 {
				rerun++
			}
		}
		if err := iter.Close(); err != nil {
			return 0, 0, 0, err
		}
	}
	iter := e.session.Query(fmt.Sprintf(`SELECT runs FROM %s.kafka_example_runs WHERE topic = ?`, e.keyspace), topic).WithContext(ctx).Iter()
	var n int64
	for iter.Scan(&n) {
		runs += n
	}
	return applied, rerun, runs, iter.Close()
}
