# cassdedup: `make test` checks and tests everything against a real Cassandra 5.0 node.
#
# Cassandra comes from, in order: CASSANDRA_HOSTS if set; else a local node that this Makefile
# starts from Maven Central (Java 17 + Maven) and stops again; else (no Java) cassandratest
# starts a container when a Docker engine answers.

SHELL        := bash
.SHELLFLAGS  := -eu -o pipefail -c
GO           ?= go
NODE         := scripts/cassandra/node.sh
LOCAL_HOSTS  ?= $(or $(CASSANDRA_ADDRESS),127.0.0.1):$(or $(CASSANDRA_CQL_PORT),9042)
CACHE        ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cassdedup
VENV         := $(CACHE)/venv
CQLSH        := $(VENV)/bin/cqlsh
CQLSH_VERSION := 6.2.2
TEST_TIMEOUT ?= 25m
OUT          := out

# The benchmark's own node: durable (commitlog fsynced as in production, no test shortcuts)
# and on its own ports, so it never reuses a test node. BENCH_PAXOS=v1 starts a Paxos v1 node;
# BENCH_COMMITLOG=group (or batch) one that fsyncs the commitlog before it acknowledges a write
# (group's window: CASSANDRA_COMMITLOG_WINDOW, default 2ms).
BENCH_PORT      ?= 9043
BENCH_PAXOS     ?= v2
BENCH_COMMITLOG ?= periodic
BENCH_FLAGS     ?=
BENCH_NODE   := CASSANDRA_DURABLE=1 CASSANDRA_COMMITLOG=$(BENCH_COMMITLOG) CASSANDRA_CQL_PORT=$(BENCH_PORT) CASSANDRA_STORAGE_PORT=7100 CASSANDRA_PAXOS=$(BENCH_PAXOS) CASSANDRA_HEAP=$(if $(filter 1,$(BENCH_NODES)),2G,1G) $(NODE)

.PHONY: test test-faults check fmt-check vet go-test cqlsh cassandra-up cassandra-down cassandra-restart cassandra-kill schema fuzz bench bench-long

## bench: the LWT latency benchmark (about a minute) against CASSANDRA_HOSTS, or against a
## durable local node started for the run and stopped after it. Results go to out/.
## BENCH_NODES=3 starts a three-node cluster on 127.0.0.1-3 instead and replicates with RF 3,
## so Paxos rounds cross (loopback) connections as in production.
BENCH_NODES ?= 1
BENCH_ADDRS := $(foreach i,$(shell seq 1 $(BENCH_NODES)),127.0.0.$(i))
BENCH_RF    := $(if $(filter 1,$(BENCH_NODES)),1,3)
bench:
	$(GO) build -o bin/lwtbench ./cmd/lwtbench
	@if [ -n "$${CASSANDRA_HOSTS:-}" ]; then bin/lwtbench -hosts "$$CASSANDRA_HOSTS" -out $(OUT) $(BENCH_FLAGS); \
	else trap 'for a in $(BENCH_ADDRS); do CASSANDRA_ADDRESS=$$a $(BENCH_NODE) down; done' EXIT; \
	  for a in $(BENCH_ADDRS); do CASSANDRA_ADDRESS=$$a CASSANDRA_SEEDS=127.0.0.1:7100 $(BENCH_NODE) up; done; \
	  bin/lwtbench -hosts 127.0.0.1:$(BENCH_PORT) -rf $(BENCH_RF) -out $(OUT) $(BENCH_FLAGS); fi

## bench-long: the same with the -long preset (about ten minutes, concurrency up to 64).
bench-long:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS="-long $(BENCH_FLAGS)"

## test: gofmt, go vet, then every test with -race against a real Cassandra node.
test: check cqlsh
	@$(call with_cassandra,$(MAKE) --no-print-directory go-test)

check: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# go-test expects CASSANDRA_HOSTS (or Docker); `make test` provides it. A skipped test fails the
# run: every test here is meant to run, and a silent skip would hide a missing Cassandra.
go-test:
	@mkdir -p $(OUT)
	CQLSH=$(CQLSH) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./... 2>&1 \
	  | tee $(OUT)/test.log | grep -E '^(ok|FAIL|panic|--- FAIL|--- SKIP|\s+--- FAIL)|^\S+\.go:[0-9]+' || true
	@scripts/test-summary.sh $(OUT)/test.log

## cqlsh: the real CQL shell from PyPI in a private virtualenv (the schema tests run it).
cqlsh: $(CQLSH)
$(CQLSH):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check cqlsh==$(CQLSH_VERSION)

## test-faults: the crash tests (internal/crashtest, build tag faults), a few minutes. Each test
## starts durable nodes of its own on 127.0.0.71-74:9342 through node.sh, kills, restarts or
## freezes them or their worker processes, prints what it measured (a table at the end) and stops
## its nodes, on failure too. They need Java 17 and Maven, never CASSANDRA_HOSTS, and never skip.
FAULTS_TIMEOUT ?= 20m
test-faults:
	@mkdir -p $(OUT)
	$(GO) vet -tags faults ./internal/crashtest/
	$(GO) test -tags faults -race -count=1 -timeout $(FAULTS_TIMEOUT) -v ./internal/crashtest/ 2>&1 \
	  | tee $(OUT)/faults.log | grep -aE '^(ok|FAIL|panic|--- FAIL|--- SKIP|\s+--- FAIL)|^\S+\.go:[0-9]+|crashtest: |^\||^crash test results' || true
	@scripts/test-summary.sh $(OUT)/faults.log

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

## schema: apply the CQL schema to CASSANDRA_HOSTS, or to the local node.
schema:
	@$(call with_cassandra,$(GO) run ./cmd/cassdedup-schema -hosts "$$CASSANDRA_HOSTS")

## fuzz: run each fuzz target for FUZZTIME (default 20s).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

# with_cassandra runs $(1) with CASSANDRA_HOSTS set. When it is unset and Java is here, it starts
# the local node first and stops it afterwards, on failure too, unless the node already ran
# before (then it belongs to someone else and stays up).
define with_cassandra
if [ -n "$${CASSANDRA_HOSTS:-}" ]; then $(1); \
elif ! command -v java >/dev/null; then echo "no Java: relying on Docker through testcontainers"; $(1); \
elif $(NODE) status 2>/dev/null; then CASSANDRA_HOSTS=$(LOCAL_HOSTS) $(1); \
else trap '$(NODE) down' EXIT; $(NODE) up; CASSANDRA_HOSTS=$(LOCAL_HOSTS) $(1); fi
endef
