// Command kafka runs the batched consumer guard of package events against a real Kafka broker:
// it produces payments (some of them twice, as a retrying producer would), starts a consumer
// group of two consumer processes that process each poll with Guard.ProcessPoll and record a
// side effect in Cassandra, kills one consumer with SIGKILL in the middle of a poll, lets the
// group rebalance, and checks that every payment took effect exactly once.
//
//	make kafka-up cassandra-up   # or KAFKA_BROKERS and CASSANDRA_HOSTS of your own
//	go run . -brokers 127.0.0.1:19092 -hosts 127.0.0.1:9042 -messages 20000
//
// Message identity: the producer sets a message-id header (and uses the id as the record key,
// so copies of a message go to one partition) and the record timestamp, once per message. The
// guard keys its records by (group, topic, partition, id) and groups them by that timestamp;
// neither depends on the offset, so a redelivery of an offset and a producer duplicate at
// another offset both meet the same record.
//
// The consumers are kafkasub consumers. With -bloom they take the Bloom fast path: kafkasub turns
// it on (Guard.Own, epoch = the group generation) for the partitions each is assigned and off
// (Disown) when they are revoked or lost. Own records the ownership on the server under a lease,
// so a consumer that has been replaced (a long pause past the session timeout) but keeps
// processing its old partitions is fenced: its fast path stops before the new owner's starts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
	"github.com/cassdedup/cassdedup/guard"
)

// consumerEnv marks a process started by run as one of its consumers.
const consumerEnv = "CASSDEDUP_KAFKA_CONSUMER"

func main() {
	if os.Getenv(consumerEnv) != "" {
		os.Exit(consumerMain(os.Args[1:]))
	}
	brokers := flag.String("brokers", exampledb.EnvOr("KAFKA_BROKERS", "127.0.0.1:19092"), "Kafka seed brokers, comma-separated")
	messages := flag.Int("messages", 20000, "distinct payments to produce")
	useBloom := flag.Bool("bloom", false, "take the Bloom fast path, owned per assigned partition")
	exampledb.Main("kafka", func(ctx context.Context, session *gocql.Session, keyspace string) error {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg := runConfig{brokers: strings.Split(*brokers, ","), messages: *messages, bloom: *useBloom,
			hosts: flag.Lookup("hosts").Value.String(), keyspace: keyspace}
		cfg.spawn = func(args []string) *exec.Cmd { return exec.Command(self, args...) }
		_, err = run(ctx, session, cfg, os.Stdout)
		return err
	})
}

// consumerMain is a consumer process: it connects to Cassandra and runs one consumer until
// SIGTERM (or SIGKILL).
func consumerMain(args []string) int {
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	var c consumerConfig
	hosts := fs.String("hosts", "127.0.0.1:9042", "Cassandra contact points")
	keyspace := fs.String("keyspace", "cassdedup_examples", "keyspace")
	brokers := fs.String("brokers", "127.0.0.1:19092", "Kafka seed brokers")
	fs.StringVar(&c.name, "name", "consumer", "consumer name")
	fs.StringVar(&c.topic, "topic", "", "topic")
	fs.StringVar(&c.group, "group", "", "consumer group")
	fs.DurationVar(&c.lease, "lease", 3*time.Second, "claim lease")
	fs.IntVar(&c.dupEvery, "dup-every", 10, "every n-th payment was produced twice")
	fs.IntVar(&c.maxPoll, "max-poll", 500, "records per poll")
	fs.BoolVar(&c.bloom, "bloom", false, "Bloom fast path")
	fs.Int64Var(&c.stallAfter, "stall-after", 0, "stop in a handler after this many processed messages")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.brokers = strings.Split(*brokers, ",")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := consumeWith(ctx, *hosts, *keyspace, c); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func consumeWith(ctx context.Context, hosts, keyspace string, c consumerConfig) error {
	session, err := exampledb.Connect(hosts, keyspace)
	if err != nil {
		return err
	}
	defer session.Close()
	g, err := guard.New(session, guard.WithKeyspace(keyspace), guard.WithLease(c.lease))
	if err != nil {
		return err
	}
	con := &consumer{cfg: c, guard: g, fx: effects{session: session, keyspace: keyspace}, out: os.Stdout}
	err = consume(ctx, con)
	fmt.Fprintln(os.Stdout, "final "+con.line()[len("progress "):])
	return err
}
