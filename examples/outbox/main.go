// Command outbox runs the whole chain on a real node and a real broker: an HTTP service whose
// handler places an order under an Idempotency-Key (httpidem) and stages "order.placed" in the
// outbox; a relay that publishes committed events to Kafka (kafkapub); and a consumer whose
// batched guard dedups by event id and applies each order's amount to an event-log counter.
// Clients retry on timeouts and 409s, and send some orders twice. It prints what survived:
// requests acknowledged, events published and consumed, effects applied, lost, applied twice.
//
//	make kafka-up cassandra-up   # or KAFKA_BROKERS and CASSANDRA_HOSTS of your own
//	go run . -orders 2000 -json out.json   # make bench-e2e runs it so
//
// With -role api, relay or consume it runs one part of the chain as a process of its own,
// until SIGINT or SIGTERM, on a schema already applied (by a run without -role, or by the
// cassdedup command), and prints what it does as JSON lines; the crash tests run it so.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cassdedup/cassdedup/examples/internal/exampledb"
	"github.com/cassdedup/cassdedup/outbox"
)

func main() {
	if err := runMain(); err != nil {
		fmt.Fprintln(os.Stderr, "outbox:", err)
		os.Exit(1)
	}
}

func runMain() error {
	hosts := flag.String("hosts", exampledb.EnvOr("CASSANDRA_HOSTS", "127.0.0.1:9042"), "Cassandra contact points, comma-separated")
	brokers := flag.String("brokers", exampledb.EnvOr("KAFKA_BROKERS", "127.0.0.1:19092"), "Kafka seed brokers, comma-separated")
	keyspace := flag.String("keyspace", "outbox_example", "keyspace to create the schema in")
	orders := flag.Int("orders", 1000, "orders to place")
	clients := flag.Int("clients", 16, "concurrent clients")
	catchup := flag.Int("catchup", 0, "then a catch-up phase: this many orders placed with the consumer stopped, then its drain measured")
	warmup := flag.Int("warmup", 0, "first run this many orders through the chain, not measured")
	compareClients := flag.Int("compare-clients", 0, "the clients of the comparison's rounds (default: -clients)")
	plain := flag.Int("plain", 0, "also compare with plain ExecuteOnce: rounds of this many orders on the repeatable, plain, plain and repeatable service (the first phase is the first round when -compare-clients is -clients), the accepted rates pooled per service")
	jsonOut := flag.String("json", "", "also write the summary as JSON to this file")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up when the chain has not delivered by then")
	role := flag.String("role", "", "run one part of the chain: api, relay or consume (default: the whole chain once)")
	var rc roleConfig
	roleFlags(&rc)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *role != "" {
		rc.brokers, rc.keyspace = strings.Split(*brokers, ","), *keyspace
		return runRoleSession(ctx, *hosts, *role, rc)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	session, err := exampledb.Open(ctx, *hosts, *keyspace)
	if err != nil {
		return err
	}
	defer session.Close()
	s, err := run(ctx, session, config{brokers: strings.Split(*brokers, ","), keyspace: *keyspace, orders: *orders, clients: *clients, catchup: *catchup, plain: *plain, compareClients: *compareClients, warmup: *warmup}, os.Stdout)
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if s.Lost != 0 || s.DuplicatedEffects != 0 {
		return fmt.Errorf("%d lost, %d applied twice", s.Lost, s.DuplicatedEffects)
	}
	if r := s.inexact(); r != nil {
		return fmt.Errorf("comparison round on the %s service: %d lost, %d applied twice, effects exact: %v",
			r.Service, r.Lost, r.DuplicatedEffects, r.EffectsExact)
	}
	if c := s.Catchup; c != nil && (c.Lost != 0 || c.DuplicatedEffects != 0) {
		return fmt.Errorf("catch-up phase: %d lost, %d applied twice", c.Lost, c.DuplicatedEffects)
	}
	return nil
}

// roleFlags defines the flags of the chain's parts (-role) into rc.
func roleFlags(rc *roleConfig) {
	flag.StringVar(&rc.topic, "topic", "orders", "role: the topic of the order events")
	flag.StringVar(&rc.listen, "listen", "127.0.0.1:8080", "role api: the address to serve on")
	flag.StringVar(&rc.group, "group", "billing", "role consume: the consumer group")
	flag.StringVar(&rc.counter, "counter", "orders-placed", "role consume: the event-log counter of the amounts")
	flag.StringVar(&rc.instance, "instance", "", "role consume: a static group member id, one per consumer process: "+
		"a member that rejoins with it (after a broker restart) gets its partitions back without waiting out its old session")
	flag.BoolVar(&rc.fastPath, "fast-path", false, "role consume: the Bloom fast path on the partitions assigned (kafkasub.WithFastPath)")
	flag.IntVar(&rc.holdAfterApplied, "hold-after-applied", 0,
		"role consume (crash tests): once this many effects were applied, hold the poll's handler before its claims end, until a line on stdin")
	flag.Int64Var(&rc.holdAfterRecords, "hold-after-records", 0,
		"role consume (crash tests): once this many records were delivered, report \"holding\" at the next one and wait for a line on stdin before processing its poll")
	flag.DurationVar(&rc.sessionTimeout, "session-timeout", 0, "role consume: the group session timeout (0: franz-go's 45s)")
	flag.DurationVar(&rc.relayLease, "relay-lease", outbox.DefaultRelayLease, "role relay: how long the relay holds a shard without renewing it")
	flag.DurationVar(&rc.publishTimeout, "publish-timeout", 0,
		"role relay: each Publish's deadline and the Kafka client's delivery timeout (default outbox.DefaultPublishTimeout; shorter than -relay-lease)")
	flag.IntVar(&rc.maxMessageBytes, "max-message-bytes", 0,
		"role relay or consume: the topic's max.message.bytes if the role creates it (default: the broker's); the soak makes events over it")
	flag.DurationVar(&rc.clockOffset, "clock-offset", 0,
		"role api or relay: run the process's clocks this far off the host's, as on a host whose clock is broken (the library's clock options: lwt.WithClock, outbox.WithClock); the outbox measures the offset against Cassandra and buckets by the cluster's time")
	flag.BoolVar(&rc.holdAfterPublish, "hold-after-publish", false,
		"role relay (crash tests): after the first publish, wait for a line on stdin before marking")
}

// runRoleSession runs one part of the chain (runRole) on a session of its own.
func runRoleSession(ctx context.Context, hosts, role string, rc roleConfig) error {
	session, err := exampledb.Connect(hosts, rc.keyspace)
	if err != nil {
		return err
	}
	defer session.Close()
	return runRole(ctx, role, session, rc, os.Stdout)
}
