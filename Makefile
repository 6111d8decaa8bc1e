# cassdedup: `make test` checks and tests everything against a real Cassandra 5.0 node.
#
# Cassandra comes from, in order: CASSANDRA_HOSTS if set; else a local node that this Makefile
# starts from Maven Central (Java 17 + Maven) and stops again; else (no Java) the node of
# docker-compose.yml, started with `docker compose up -d --wait` and removed again. Kafka, for
# the tests of examples/kafka, comes from KAFKA_BROKERS if set, else from a local broker started
# the same way.

SHELL        := bash
.SHELLFLAGS  := -eu -o pipefail -c
GO           ?= go
NODE         := scripts/cassandra/node.sh
BROKER       := scripts/kafka/broker.sh
KAFKA_LOCAL  ?= $(or $(KAFKA_ADDRESS),127.0.0.1):$(or $(KAFKA_PORT),19092)
LOCAL_HOSTS  ?= $(or $(CASSANDRA_ADDRESS),127.0.0.1):$(or $(CASSANDRA_CQL_PORT),9042)
CACHE        ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cassdedup
VENV         := $(CACHE)/venv
CQLSH        := $(VENV)/bin/cqlsh
CQLSH_VERSION := 6.2.2
TEST_TIMEOUT ?= 25m
# The test node's heap: every test makes a keyspace of its own, and a node of 1G ran out of heap
# with about 130 of them alive at once (schema metadata); 2G leaves room on a machine of 24 GiB.
TEST_HEAP    ?= $(or $(CASSANDRA_HEAP),2G)
OUT          := out

# The repository's Go modules: the library (what a service imports), the exported test helper
# (Docker through testcontainers), the benchmark (plots, progress bar), the Kafka example (a Kafka
# client), the metrics adapters (the Prometheus client, OpenTelemetry), the outbox's Kafka
# publisher and the Kafka consumer adapter (franz-go), the outbox example and the history checker
# (Porcupine). Every check, test and fuzz target runs over all of them.
MODULES      := . cassandratest cmd/lwtbench examples/kafka metrics/promobs metrics/otelobs kafka/kafkapub kafka/kafkasub examples/outbox tests/histories
# The library module's direct requirements: the driver, the filter, the hash, and two test
# libraries. A new one must earn its place: every importer of the library downloads it.
LIB_REQUIRES := github.com/bits-and-blooms/bloom/v3 github.com/cespare/xxhash/v2 github.com/gocql/gocql \
                github.com/stretchr/testify go.uber.org/goleak

# The benchmark's own node: durable (commitlog fsynced as in production, no test shortcuts)
# and on its own ports, so it never reuses a test node. BENCH_PAXOS=v1 starts a Paxos v1 node;
# BENCH_COMMITLOG=group (or batch) one that fsyncs the commitlog before it acknowledges a write
# (group's window: CASSANDRA_COMMITLOG_WINDOW, default 2ms).
BENCH_PORT      ?= 9043
BENCH_STORAGE_PORT ?= 7100
BENCH_PAXOS     ?= v2
BENCH_COMMITLOG ?= periodic
BENCH_FLAGS     ?=
BENCH_NODE   := CASSANDRA_DURABLE=1 CASSANDRA_COMMITLOG=$(BENCH_COMMITLOG) CASSANDRA_CQL_PORT=$(BENCH_PORT) CASSANDRA_STORAGE_PORT=$(BENCH_STORAGE_PORT) CASSANDRA_PAXOS=$(BENCH_PAXOS) CASSANDRA_HEAP=2G $(NODE)

.PHONY: test test-faults check fmt-check vet tidy-check deps-check go-test cqlsh cassandra-up cassandra-down cassandra-restart cassandra-kill \
        go-test-with-kafka kafka-up kafka-down schema fuzz bench bench-long cluster-up cluster-down test-cluster bench-saturation \
        bench-hot-counter vulncheck bench-e2e bench-e2e-run bench-peers bench-peers-run bench-peers-cassandra go-test-with-peers soak \
        test-histories

## bench: the LWT latency benchmark (about a minute) against CASSANDRA_HOSTS, or against a
## durable local node started for the run and stopped after it. Results go to out/.
## BENCH_NODES=3 starts a three-node cluster instead (scripts/cluster/cluster.sh: each node in a
## network namespace of its own) with BENCH_LATENCY ms round trips between any two hosts
## (default 1, a same-region network), and replicates with RF 3, so Paxos rounds cross a network.
BENCH_NODES   ?= 1
BENCH_LATENCY ?= 1
BENCH_RF      := $(if $(filter 1,$(BENCH_NODES)),1,3)
BENCH_CLUSTER := CLUSTER_NODES=$(BENCH_NODES) CLUSTER_DCS=1 CLUSTER_LATENCY=$(BENCH_LATENCY) CLUSTER_PAXOS=$(BENCH_PAXOS) \
                 CLUSTER_DURABLE=1 CLUSTER_COMMITLOG=$(BENCH_COMMITLOG) CLUSTER_HEAP=1G CLUSTER_PREFIX=cdb CLUSTER_NET=10.98 \
                 CLUSTER_RUN_DIR=$(or $(TMPDIR),/tmp)/cassdedup-bench-cluster scripts/cluster/cluster.sh
bench:
	$(GO) -C cmd/lwtbench build -o $(CURDIR)/bin/lwtbench .
	@$(call with_bench_cassandra,bin/lwtbench -hosts "$$hosts" -rf $(BENCH_RF) -out $(OUT) $(BENCH_FLAGS))

## bench-saturation: for insert, lwt-new and once-new, the open-loop rate at which the p99
## leaves its floor (scripts/bench/saturation.sh), on the same node or cluster as bench.
bench-saturation:
	$(GO) -C cmd/lwtbench build -o $(CURDIR)/bin/lwtbench .
	@$(call with_bench_cassandra,scripts/bench/saturation.sh bin/lwtbench $(OUT) -hosts "$$hosts" -rf $(BENCH_RF) $(BENCH_FLAGS))

# with_bench_cassandra runs $(1) with $$hosts set to CASSANDRA_HOSTS, or to a node or cluster
# started for it and stopped after it, on failure too.
define with_bench_cassandra
if [ -n "$${CASSANDRA_HOSTS:-}" ]; then hosts=$$CASSANDRA_HOSTS; $(1); \
elif [ "$(BENCH_NODES)" = 1 ]; then trap '$(BENCH_NODE) down' EXIT; $(BENCH_NODE) up; \
  hosts=127.0.0.1:$(BENCH_PORT); $(1); \
else trap '$(BENCH_CLUSTER) down' EXIT; $(BENCH_CLUSTER) up; hosts=$$($(BENCH_CLUSTER) hosts); $(1); fi
endef

## bench-hot-counter: the event log under one hot counter (lwtbench -hot-counter): it is written
## as fast as HOT_WRITERS goroutines can for HOT_DURATION while another goroutine reads its total,
## then HOT_COUNTERS counters are written at once the same way; each case reports events/s, the
## total's p50/p99 while writing, the largest partition (counted after the run, projected to 10k
## events/s) and whether every total was exact. Same node or cluster as bench; results in out/.
## Each case runs the same load HOT_WARMUP first on its own counters, unmeasured: a node started for
## the run answered the first case's reads about twice as slowly at the p99 after a 5 s warm-up as
## after 30 s, and a counter's windows take the width its traffic calls for about 95 s after its
## first events (events.WithWindowWidths), as a long-lived counter's have. With -hot-rate, a
## writer behind its schedule sends its next event as soon as its last returns, so the writers
## hold a rate only while rate x a Record's mean latency stays under HOT_WRITERS (Little's law):
## 32 writers held 3,292 events/s of 10,000 for 10,000 counters (a 9.7 ms mean on a loaded node).
HOT_WARMUP   ?= 110s
HOT_DURATION ?= 60s
HOT_WRITERS  ?= 64
HOT_COUNTERS ?= 10000
bench-hot-counter:
	$(GO) -C cmd/lwtbench build -o $(CURDIR)/bin/lwtbench .
	@$(call with_bench_cassandra,bin/lwtbench -hot-counter -hosts "$$hosts" -rf $(BENCH_RF) -out $(OUT) \
	  -warmup $(HOT_WARMUP) -duration $(HOT_DURATION) -writers $(HOT_WRITERS) -counters $(HOT_COUNTERS) $(BENCH_FLAGS))

## bench-e2e: the outbox chain end to end (examples/outbox): clients that time out, retry and
## double-submit → httpidem + outbox → relay → Kafka → batched guard → event-log counter, on the
## node of bench (or CASSANDRA_HOSTS) and a broker (KAFKA_BROKERS, else one started for the run).
## Writes out/bench-e2e.json: requests, effects_exact, lost, duplicated_effects, msgs_per_s,
## p50_ms and p99_ms (request accepted → effect applied), accepted_per_s, consumer_lag_s (last
## order accepted → last effect), relay_reads_per_intent (Stats.RowsRead per message published),
## and catchup_msgs_per_s with a "catchup" object: a second phase of E2E_CATCHUP orders placed
## while the consumer is stopped, then its drain rate from its start to the last effect (0: none),
## and the comparison with plain ExecuteOnce (two Paxos rounds per order, not one), in the same
## run: four phases of E2E_PLAIN orders from E2E_COMPARE_CLIENTS clients, the one-round service,
## plain, plain, then the one-round service again ("rounds"), and plain_accepted_per_s,
## repeatable_accepted_per_s and accepted_vs_plain from each service's rounds pooled, with the
## first plain round whole as "plain".
E2E_ORDERS  ?= 5000
E2E_PLAIN   ?= $(E2E_ORDERS)
# E2E_WARMUP orders go through the chain first, not measured: the first measured phase would
# otherwise pay for a fresh node's warm-up alone.
E2E_WARMUP  ?= 1000
E2E_CLIENTS ?= 32
# The comparison measures what each service reaches, so its clients load both to their limit:
# 32 clients leave the one-round service waiting on them, and from 96 its own clients' timeouts
# and retries pile up (docs/outbox.md has the runs).
E2E_COMPARE_CLIENTS ?= 64
E2E_CATCHUP ?= 20000
# E2E_TIMEOUT bounds the whole run: with the catch-up phase it places 25,000 orders, minutes on a
# loaded 2-core machine.
E2E_TIMEOUT ?= 30m
bench-e2e:
	@mkdir -p $(OUT)
	$(GO) -C examples/outbox build -o $(CURDIR)/bin/outbox-e2e .
	@$(call with_bench_cassandra,$(MAKE) --no-print-directory bench-e2e-run E2E_HOSTS="$$hosts")

# bench-e2e-run runs in its own make so the broker's trap and the node's do not replace each other.
bench-e2e-run:
	@$(call with_kafka,bin/outbox-e2e -hosts "$(E2E_HOSTS)" -keyspace outbox_e2e \
	  -orders $(E2E_ORDERS) -clients $(E2E_CLIENTS) -catchup $(E2E_CATCHUP) -plain $(E2E_PLAIN) -compare-clients $(E2E_COMPARE_CLIENTS) -warmup $(E2E_WARMUP) -timeout $(E2E_TIMEOUT) -json $(OUT)/bench-e2e.json | tail -60)

## bench-peers: the toolkit's operations beside Postgres's and Redis's doing the same (lwtbench
## -peers): 1 / 16 / 64 workers, each server measured alone, table on stdout, JSON (one entry per
## store, operation and workers) and chart in out/. It starts, for the run, a durable Cassandra
## node on PEERS_BENCH_PORT / PEERS_STORAGE_PORT with commitlog PEERS_COMMITLOG (batch: fsynced
## before the reply, as Postgres's commits and Redis's appendfsync always are), a Postgres
## (scripts/peers/postgres.sh: fsync and synchronous_commit on) and two Redis servers
## (scripts/peers/redis.sh: appendfsync always, and everysec), and stops them all after it, on
## failure too. CASSANDRA_HOSTS replaces the node. PEERS_FLAGS adds lwtbench flags.
PEERS_BENCH_PORT   ?= 9045
PEERS_STORAGE_PORT ?= 7102
PEERS_COMMITLOG    ?= batch
PEERS_DURATION     ?= 10s
PEERS_FLAGS        ?=
PEERS_PG           := scripts/peers/postgres.sh
PEERS_REDIS        := scripts/peers/redis.sh
# The benchmark's servers have ports of their own, so a run never meets the tests' servers.
PEERS_BENCH_PG       := PEERS_PG_PORT=15433 $(PEERS_PG)
PEERS_BENCH_ALWAYS   := PEERS_REDIS_PORT=16381 PEERS_REDIS_FSYNC=always $(PEERS_REDIS)
PEERS_BENCH_EVERYSEC := PEERS_REDIS_PORT=16382 PEERS_REDIS_FSYNC=everysec $(PEERS_REDIS)
bench-peers:
	$(GO) -C cmd/lwtbench build -o $(CURDIR)/bin/lwtbench .
	@mkdir -p $(OUT)
	@$(MAKE) --no-print-directory bench-peers-run BENCH_PORT=$(PEERS_BENCH_PORT) \
	  BENCH_STORAGE_PORT=$(PEERS_STORAGE_PORT) BENCH_COMMITLOG=$(PEERS_COMMITLOG) BENCH_NODES=1

# bench-peers-run starts the peers (its trap stops them) and runs the node's part in its own make,
# so the node's trap and the peers' do not replace each other.
bench-peers-run:
	@trap '$(PEERS_BENCH_EVERYSEC) down; $(PEERS_BENCH_ALWAYS) down; $(PEERS_BENCH_PG) down' EXIT; \
	$(PEERS_BENCH_PG) up; $(PEERS_BENCH_ALWAYS) up; $(PEERS_BENCH_EVERYSEC) up; \
	PEERS_POSTGRES_URL=$$($(PEERS_BENCH_PG) url) PEERS_REDIS_ALWAYS_ADDR=$$($(PEERS_BENCH_ALWAYS) addr) \
	  PEERS_REDIS_EVERYSEC_ADDR=$$($(PEERS_BENCH_EVERYSEC) addr) $(MAKE) --no-print-directory bench-peers-cassandra

bench-peers-cassandra:
	@$(call with_bench_cassandra,bin/lwtbench -peers -hosts "$$hosts" -rf 1 -duration $(PEERS_DURATION) -out $(OUT) $(PEERS_FLAGS))

## bench-long: the same with the -long preset (about ten minutes, concurrency up to 64).
bench-long:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS="-long $(BENCH_FLAGS)"

## test: gofmt, go vet and tidy go.mod files, then every test of every module with -race
## against a real Cassandra node (and, for examples/kafka, a real Kafka broker).
test: check cqlsh
	@$(call with_cassandra,$(MAKE) --no-print-directory go-test-with-kafka)

# go-test-with-kafka runs in its own make (its own shell), so the broker's trap and the node's
# do not replace each other.
go-test-with-kafka:
	@$(call with_kafka,$(MAKE) --no-print-directory go-test-with-peers)

# go-test-with-peers runs go-test with a Postgres and a Redis for cmd/lwtbench's peers tests
# (PEERS_POSTGRES_URL, PEERS_REDIS_ADDR): the given ones, else ones that already run (they stay
# up), else ones started by scripts/peers/*.sh (Redis installed with apt-get when missing and
# root) and stopped after it, on failure too. A server that cannot be had fails the run under
# CI=true; elsewhere the run goes on and the peers tests fail, naming what is missing.
go-test-with-peers:
	@stop=; trap 'for s in $$stop; do $$s down; done' EXIT; \
	if [ -z "$${PEERS_POSTGRES_URL:-}" ]; then \
	  if ! $(PEERS_PG) status 2>/dev/null; then \
	    if $(PEERS_PG) up; then stop="$$stop $(PEERS_PG)"; \
	    elif [ "$${CI:-}" = true ]; then echo "no Postgres for the peers tests: see the message above"; exit 1; fi; fi; \
	  export PEERS_POSTGRES_URL=$$($(PEERS_PG) url); fi; \
	if [ -z "$${PEERS_REDIS_ADDR:-}" ]; then \
	  if ! $(PEERS_REDIS) status 2>/dev/null; then \
	    if $(PEERS_REDIS) up; then stop="$$stop $(PEERS_REDIS)"; \
	    elif [ "$${CI:-}" = true ]; then echo "no Redis for the peers tests: see the message above"; exit 1; fi; fi; \
	  export PEERS_REDIS_ADDR=$$($(PEERS_REDIS) addr); fi; \
	$(MAKE) --no-print-directory go-test

check: fmt-check vet tidy-check deps-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@for m in $(MODULES); do echo "go vet $$m"; $(GO) -C $$m vet -tags cluster,faults,soak ./...; done

tidy-check:
	@for m in $(MODULES); do $(GO) -C $$m mod tidy -diff || { echo "go.mod of $$m is not tidy: run go mod tidy there"; exit 1; }; done

deps-check:
	@got=$$($(GO) list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}{{end}}' all | sort | xargs); \
	if [ "$$got" != "$(sort $(LIB_REQUIRES))" ]; then \
	  echo "the library module requires $$got; LIB_REQUIRES in the Makefile lists $(sort $(LIB_REQUIRES))"; exit 1; fi

# go-test expects CASSANDRA_HOSTS (or Docker); `make test` provides it. A skipped test fails the
# run: every test here is meant to run, and a silent skip would hide a missing Cassandra.
go-test:
	@mkdir -p $(OUT)
	@for m in $(MODULES); do echo "go test $$m"; \
	  CQLSH=$(CQLSH) $(GO) -C $$m test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./... 2>&1 || true; done \
	  | tee $(OUT)/test.log | grep -E '^(go test |ok|FAIL|panic|goleak|--- FAIL|--- SKIP|\s+--- FAIL)|^\S+\.go:[0-9]+' || true
	@scripts/test-summary.sh $(OUT)/test.log

## cqlsh: the real CQL shell from PyPI in a private virtualenv (the schema tests run it).
cqlsh: $(CQLSH)
$(CQLSH):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check cqlsh==$(CQLSH_VERSION)

## cluster-up / cluster-down: a cluster whose links can fail (scripts/cluster/cluster.sh):
## CLUSTER_NODES nodes in CLUSTER_DCS datacentres, each in a network namespace of its own behind
## a router, CLUSTER_LATENCY ms round trips on every link. Needs root and iproute2.
CLUSTER_NODES   ?= 3
CLUSTER_DCS     ?= 2
CLUSTER_LATENCY ?= 0
CLUSTER         := CLUSTER_NODES=$(CLUSTER_NODES) CLUSTER_DCS=$(CLUSTER_DCS) CLUSTER_LATENCY=$(CLUSTER_LATENCY) scripts/cluster/cluster.sh
cluster-up:
	$(CLUSTER) up
cluster-down:
	$(CLUSTER) down

## test-cluster: the tests that kill, isolate and cut nodes (tests/clustertest, build tag
## cluster) on a cluster of three nodes in two datacentres, started for the run and torn down
## after it, on failure too. Each scenario prints a REPORT row for docs/clusters.md's table; a
## failed assertion prints its whole message (the error too), the rest is in out/cluster.log.
## A loaded two-core machine takes minutes to restart a node: the bound is generous.
CLUSTER_TIMEOUT ?= 40m
test-cluster:
	@mkdir -p $(OUT)
	@trap '$(CLUSTER) down' EXIT; $(CLUSTER) up; \
	CLUSTER_HOSTS=$$($(CLUSTER) hosts) $(GO) test -tags cluster -race -count=1 -timeout $(CLUSTER_TIMEOUT) -v ./tests/clustertest/ 2>&1 \
	  | tee $(OUT)/cluster.log | awk '{ if ($$0 ~ /Error:/) e = 1; else if (e && $$0 !~ /^ +\t/) e = 0 } \
	    e || /^(=== RUN|[[:space:]]*--- |ok|FAIL|PASS|panic)|REPORT/ { print; fflush() }'

## test-histories: the library's clients against three nodes (RF 3, QUORUM and SERIAL) under a
## seeded nemesis, every operation recorded and the history checked (tests/histories,
## docs/verification.md). HISTORY_CLIENTS client processes of HISTORY_WORKERS workers run
## ExecuteOnce on hot keys (its function writes a fenced effect row and stages an outbox event),
## serial reads, event-log increments and totals, and a relay each, for HISTORY_TIME per seed of
## HISTORY_SEEDS, while the nemesis kills, pauses, isolates and skews nodes and clients; then
## each key's record is checked for linearizability with Porcupine, and the set checks run. Each mutant of HISTORY_MUTANTS (the library built with the build tag
## mutant_<name>: a planted bug) then runs on the same schedules for HISTORY_MUTANT_TIME and must
## be caught. The cluster has its own prefix, network and run directory, so it never meets
## test-cluster's or the benchmark's, and it is torn down after the run, on failure too.
## Histories, counterexamples and out/histories.json are under $(OUT). HISTORY_TIME=30m for long runs.
# Four seeds: with the nodes' commitlog synced (group) three gave 8,954 and 9,687 operations in
# two runs, four 10,656 (docs/verification.md, runs).
HISTORY_SEEDS       ?= 1,2,3,4
HISTORY_TIME        ?= 45s
HISTORY_MUTANTS     ?= nofence,unknown_not_applied,mark_before_publish
HISTORY_MUTANT_TIME ?= 40s
# A mutant runs the library's seeds first, then these three more, until one catches it. The
# fence mutant is caught on every schedule that pauses a client (the paused client's keys are
# retried by the others, which take its claims over: docs/verification.md). Seeds 1 and 3 come
# first: both pause a client within 40 s, while seed 2's schedule of 40 s pauses none.
HISTORY_MUTANT_SEEDS ?= 1,3,2,4,101,102,103
HISTORY_CLIENTS     ?= 3
HISTORY_WORKERS     ?= 6
# HISTORY_FLAGS adds flags of `histories run`, e.g. -skew-all (docs/verification.md).
HISTORY_FLAGS       ?=
HISTORY_RUN_DIR     := $(or $(TMPDIR),/tmp)/cassdedup-histories-cluster
# The nodes sync their commitlog before they acknowledge (group, a 2 ms window): the nemesis
# isolates a node and kills another within seconds, which `periodic` does not promise to survive
# (docs/durability.md), so a violation is the library's, not the commitlog's.
HISTORY_COMMITLOG   ?= group
HISTORY_CLUSTER     := CLUSTER_COMMITLOG=$(HISTORY_COMMITLOG) CLUSTER_NODES=3 CLUSTER_DCS=1 CLUSTER_LATENCY=0 CLUSTER_HEAP=768M CLUSTER_PREFIX=chs CLUSTER_NET=10.97 \
                       CLUSTER_RUN_DIR=$(HISTORY_RUN_DIR) scripts/cluster/cluster.sh
test-histories:
	@mkdir -p $(OUT) bin
	$(GO) -C tests/histories build -o $(CURDIR)/bin/histories .
	@for m in $(subst $(comma), ,$(HISTORY_MUTANTS)); do \
	  $(GO) -C tests/histories build -tags mutant_$$m -o $(CURDIR)/bin/histories-mutant_$$m . || exit 1; done
	@trap '$(HISTORY_CLUSTER) down' EXIT; $(HISTORY_CLUSTER) up; \
	CLUSTER_RUN_DIR=$(HISTORY_RUN_DIR) bin/histories run -hosts "$$($(HISTORY_CLUSTER) hosts)" -cluster scripts/cluster/cluster.sh \
	  -seeds $(HISTORY_SEEDS) -time $(HISTORY_TIME) -mutants "$(HISTORY_MUTANTS)" -mutant-time $(HISTORY_MUTANT_TIME) \
	  -mutant-seeds $(HISTORY_MUTANT_SEEDS) \
	  -clients $(HISTORY_CLIENTS) -workers $(HISTORY_WORKERS) -bin-dir bin -out $(OUT) $(HISTORY_FLAGS) 2>&1 | tee $(OUT)/histories.log

comma := ,

## test-faults: the crash tests (tests/crashtest, build tag faults), a few minutes. Each test
## starts durable nodes of its own on 127.0.0.71-74:9342 through node.sh, kills, restarts or
## freezes them or their worker processes, prints what it measured (a table at the end) and stops
## its nodes, on failure too. They need Java 17 and Maven, never CASSANDRA_HOSTS, and never skip.
## The outbox chain's test (TestOutboxChainCrashes) adds a node on 127.0.0.75, a Kafka broker of
## its own on 127.0.0.76:19392 (never KAFKA_BROKERS) and examples/outbox's processes, with the
## order service on 127.0.0.77:19380; CRASHTEST_OUTBOX_HOSTS=node,broker,api:port moves them
## (loopback only), so a second run can sit beside one that holds the defaults. The whole run
## took 632 s with one outbox scenario on a loaded machine; the outbox test's four scenarios took
## 220 to 330 s alone, so the ceiling leaves room for a slower machine.
FAULTS_TIMEOUT ?= 30m
test-faults:
	@mkdir -p $(OUT)
	$(GO) vet -tags faults ./tests/crashtest/
	$(GO) test -tags faults -race -count=1 -timeout $(FAULTS_TIMEOUT) -v ./tests/crashtest/ 2>&1 \
	  | tee $(OUT)/faults.log | grep -aE '^(ok|FAIL|panic|--- FAIL|--- SKIP|\s+--- FAIL)|^\S+\.go:[0-9]+|crashtest: |^\||^crash test results' || true
	@scripts/test-summary.sh $(OUT)/faults.log

## soak: the outbox chain (examples/outbox's processes) under steady traffic for SOAK (default 10m)
## while a loop kills the relay, restarts the broker, kills the consumer, restarts the node
## (SIGTERM, then SIGKILL on its data) and injects poison events (over the topic's
## max.message.bytes) every 30 s (tests/soak, build tag soak). Its own durable node, broker and
## order service on 127.0.0.81:9342, 127.0.0.82:19492 and 127.0.0.83:19480 (SOAK_HOSTS moves them,
## loopback only), stopped at the end, on failure too; SOAK_RATE orders/s (default 10). Writes
## $(OUT)/soak.json and $(OUT)/soak.log (OUT=dir moves both, and the run directories) and fails unless effects are exact, nothing is lost or applied twice, every poison
## event is parked and every table's rows are within their bound. Not part of make test.
SOAK      ?= 10m
SOAK_RATE ?= 10
# The run, plus a few minutes per node restart on a loaded machine and up to 6 minutes to settle.
SOAK_TIMEOUT ?= 60m
# The node's and the broker's run directories are under $(OUT)/soak-run, so the trap stops them
# even when the test binary dies before its cleanups (a -timeout panic, Ctrl-C), and a run stops
# what a run before it left behind before it starts.
# Absolute, since the test runs in its package's directory: OUT may be relative or absolute.
SOAK_OUT_DIR := $(abspath $(OUT))
SOAK_RUN_DIR := $(SOAK_OUT_DIR)/soak-run
SOAK_DOWN    := CASSANDRA_RUN_DIR=$(SOAK_RUN_DIR)/node $(NODE) down >/dev/null 2>&1 || true; \
                KAFKA_RUN_DIR=$(SOAK_RUN_DIR)/broker $(BROKER) down >/dev/null 2>&1 || true
soak:
	@mkdir -p $(OUT)
	$(GO) vet -tags soak ./tests/soak/
	@$(SOAK_DOWN); trap '$(SOAK_DOWN)' EXIT; \
	SOAK=$(SOAK) SOAK_RATE=$(SOAK_RATE) SOAK_RUN_DIR=$(SOAK_RUN_DIR) SOAK_OUT=$(SOAK_OUT_DIR)/soak.json $(GO) test -tags soak -count=1 -run TestSoak -timeout $(SOAK_TIMEOUT) \
	  -v ./tests/soak/ 2>&1 | tee $(OUT)/soak.log | grep --line-buffered -aE '^(ok|FAIL|panic|--- )|soak: ' || true
	@grep -q '^--- PASS: TestSoak' $(OUT)/soak.log

## cassandra-up / cassandra-down: a local node on $(LOCAL_HOSTS) (see scripts/cassandra/node.sh;
## e.g. CASSANDRA_DURABLE=1 CASSANDRA_COMMITLOG=group make cassandra-up for a durable one).
## cassandra-kill stops it with SIGKILL, as a crash would, keeping its data; cassandra-restart
## stops it if it runs and starts it on the same data with the settings of the last up, so
## Cassandra replays its commitlog.
cassandra-up:
	$(NODE) up
cassandra-down:
	$(NODE) down
cassandra-restart:
	$(NODE) restart
cassandra-kill:
	$(NODE) kill

## kafka-up / kafka-down: a local Kafka broker (KRaft) on $(KAFKA_LOCAL) (see scripts/kafka/broker.sh).
kafka-up:
	$(BROKER) up
kafka-down:
	$(BROKER) down

## schema: apply the CQL schema to CASSANDRA_HOSTS, or to the local node.
schema:
	@$(call with_cassandra,$(GO) run ./cmd/cassdedup schema apply -hosts "$$CASSANDRA_HOSTS")

## vulncheck: govulncheck over every module: the known vulnerabilities that each module's code
## reaches through its dependencies and the standard library of the toolchain its go.mod names
## (GOTOOLCHAIN=auto, so the `toolchain` line is honoured even where the installed Go says
## local). Not part of `make test`. The database is GOVULNDB when set (https://vuln.go.dev, or
## file:///a/local/copy), else a local copy that scripts/vuln/vulndb.sh builds once from the
## golang.org/x/vulndb module into the cache (vuln.go.dev need not be reachable). GOVULNCHECK
## names the binary, else the script installs govulncheck from the module proxy into the cache.
VULNDB_SH := scripts/vuln/vulndb.sh
TOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)
vulncheck:
	@gvc='$(GOVULNCHECK)'; db='$(GOVULNDB)'; \
	gvc=$${gvc:-$$(GO=$(GO) GOTOOLCHAIN=$${GOTOOLCHAIN:-$(TOOLCHAIN)} $(VULNDB_SH) govulncheck)}; \
	db=$${db:-$$(GO=$(GO) $(VULNDB_SH) db)}; \
	echo "govulncheck: $$gvc, database $$db"; \
	fail=0; for m in $(MODULES); do echo "govulncheck $$m"; \
	  (cd $$m && GOTOOLCHAIN=$${GOTOOLCHAIN:-auto} $$gvc -db "$$db" ./...) || fail=1; done; exit $$fail

## fuzz: run each fuzz target of every module for FUZZTIME (default 20s).
FUZZTIME ?= 20s
fuzz:
	@for m in $(MODULES); do for pkg in $$($(GO) -C $$m list ./...); do \
	  for f in $$($(GO) -C $$m test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) -C $$m test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done; done

# with_cassandra runs $(1) with CASSANDRA_HOSTS set. When it is unset and Java is here, it starts
# the local node first and stops it afterwards, on failure too, unless the node already ran
# before (then it belongs to someone else and stays up). Without Java it does the same with
# docker-compose.yml's node.
define with_cassandra
if [ -n "$${CASSANDRA_HOSTS:-}" ]; then $(1); \
elif ! command -v java >/dev/null; then \
  if ! docker info >/dev/null 2>&1; then echo "no CASSANDRA_HOSTS, no Java 17 and no Docker engine: see docs/development.md"; exit 1; fi; \
  if [ -z "$$(docker compose ps -q cassandra)" ]; then trap 'docker compose down' EXIT; fi; \
  echo "no Java: docker compose up -d --wait"; docker compose up -d --wait; CASSANDRA_HOSTS=127.0.0.1:9042 $(1); \
elif $(NODE) status 2>/dev/null; then CASSANDRA_HOSTS=$(LOCAL_HOSTS) $(1); \
else trap '$(NODE) down' EXIT; CASSANDRA_HEAP=$(TEST_HEAP) $(NODE) up; CASSANDRA_HOSTS=$(LOCAL_HOSTS) $(1); fi
endef

# with_kafka runs $(1) with KAFKA_BROKERS set, as with_cassandra does for Cassandra: a broker
# this Makefile starts is stopped afterwards; one that already ran stays up.
define with_kafka
if [ -n "$${KAFKA_BROKERS:-}" ]; then $(1); \
elif ! command -v java >/dev/null; then echo "no Java: the Kafka tests need KAFKA_BROKERS"; $(1); \
elif $(BROKER) status 2>/dev/null; then KAFKA_BROKERS=$(KAFKA_LOCAL) $(1); \
else trap '$(BROKER) down' EXIT; $(BROKER) up; KAFKA_BROKERS=$(KAFKA_LOCAL) $(1); fi
endef
