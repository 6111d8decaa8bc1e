#!/usr/bin/env bash
# node.sh runs one real Apache Cassandra 5.0 node on loopback without Docker: it resolves
# cassandra-all and its runtime dependencies from Maven Central into a cache outside the
# repository, writes a cassandra.yaml, starts CassandraDaemon with the JDK 17 flags and waits
# until a CQL query answers.
#
#   node.sh up       start the node on a fresh data directory (a no-op when it already runs)
#   node.sh down     stop it by its PID and remove its data (CASSANDRA_KEEP_DATA=1 keeps it)
#   node.sh restart  stop it (SIGTERM) if it runs, then start it again on the same data with the
#                    settings `up` saved, whatever the environment says now (only the address and
#                    port, or CASSANDRA_RUN_DIR, are needed to find it)
#   node.sh kill     SIGKILL by its PID, as a crash or power cut would stop it: nothing is
#                    flushed and the data stays, for `restart` (which replays the commitlog)
#   node.sh status   exit 0 when the node answers CQL
#   node.sh joined N wait until the node holds N peers in its ring with their datacentres (a
#                    node answers CQL before gossip has told it of the nodes started beside it)
#   node.sh fetch    only resolve the jars
#   node.sh log      print the node's log file
#   node.sh nodetool ARGS  run nodetool against the node (needs CASSANDRA_JMX_PORT)
#
# Settings (environment; `restart` reuses those of the last `up`):
#   CASSANDRA_VERSION     5.0.x release from Maven Central      (default 5.0.9)
#   CASSANDRA_ADDRESS     loopback address to bind               (default 127.0.0.1)
#   CASSANDRA_CQL_PORT    native protocol port                   (default 9042)
#   CASSANDRA_STORAGE_PORT internode port; differ it to run two nodes on one address (default 7000)
#   CASSANDRA_SEEDS       seed list, to join a cluster           (default this node: a cluster of one)
#   CASSANDRA_PAXOS       paxos_variant: v1 or v2                (default v2)
#   CASSANDRA_HEAP        JVM heap                               (default 1G)
#   CASSANDRA_DURABLE     1: no skip_sync (benchmarks, durability tests); 0: test speed-ups (default)
#   CASSANDRA_COMMITLOG   commitlog_sync: when a write is on disk (default periodic)
#                           periodic  acknowledged at once, fsynced every period: a machine crash
#                                     loses up to one period of acknowledged writes, a crash of
#                                     the process (kill) the last ~100 ms (replay stops at the
#                                     last sync marker, written every 100 ms)
#                           group     acknowledged after the fsync that ends its window: nothing
#                                     acknowledged is lost
#                           batch     acknowledged after an fsync that starts as soon as writes
#                                     are waiting: nothing acknowledged is lost
#                         group and batch need CASSANDRA_DURABLE=1 (skip_sync never fsyncs).
#   CASSANDRA_COMMITLOG_PERIOD  periodic's commitlog_sync_period (default 10000ms, Cassandra's)
#   CASSANDRA_COMMITLOG_WINDOW  group's commitlog_sync_group_window (default 2ms; a longer window
#                         puts more writes in each fsync but makes every write wait longer: with
#                         15ms LWTs were 2-6 times slower on the development machine, see docs/durability.md)
#   CASSANDRA_RUN_DIR     PID file, data and logs                (default $TMPDIR/cassdedup-node-<address>-<port>)
#   CASSDEDUP_CACHE       jar cache                              (default $XDG_CACHE_HOME/cassdedup)
#   CASSANDRA_START_TIMEOUT seconds to wait for CQL              (default 240)
#   CASSANDRA_NETNS       network namespace to run the node in (scripts/cluster/cluster.sh makes them)
#   CASSANDRA_DC, CASSANDRA_RACK  datacentre and rack: GossipingPropertyFileSnitch instead of
#                         SimpleSnitch                           (default unset: SimpleSnitch)
#   CASSANDRA_NUM_TOKENS  vnodes per node                        (default 16)
#   CASSANDRA_JMX_PORT    local-only JMX port, for nodetool      (default unset: JMX off)
#   CASSANDRA_KEEP_DATA   1: up restarts on the data a crash or `down` left; down keeps it (default 0)
#   CASSANDRA_AUTH        1: PasswordAuthenticator, superuser cassandra/cassandra (default 0)
#   CASSANDRA_TLS         1: client encryption required, with a key pair made by keytool at
#                         start in $CASSANDRA_RUN_DIR/tls; clients trust tls/node.pem (default 0)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

version=${CASSANDRA_VERSION:-5.0.9}
address=${CASSANDRA_ADDRESS:-127.0.0.1}
cql_port=${CASSANDRA_CQL_PORT:-9042}
storage_port=${CASSANDRA_STORAGE_PORT:-7000}
seeds=${CASSANDRA_SEEDS:-$address:$storage_port}
paxos=${CASSANDRA_PAXOS:-v2}
heap=${CASSANDRA_HEAP:-1G}
durable=${CASSANDRA_DURABLE:-0}
commitlog=${CASSANDRA_COMMITLOG:-periodic}
commitlog_period=${CASSANDRA_COMMITLOG_PERIOD:-10000ms}
commitlog_window=${CASSANDRA_COMMITLOG_WINDOW:-2ms}
run_dir=${CASSANDRA_RUN_DIR:-${TMPDIR:-/tmp}/cassdedup-node-$address-$cql_port}
cache=${CASSDEDUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cassdedup}
start_timeout=${CASSANDRA_START_TIMEOUT:-240}
netns=${CASSANDRA_NETNS:-}
dc=${CASSANDRA_DC:-}
rack=${CASSANDRA_RACK:-rack1}
num_tokens=${CASSANDRA_NUM_TOKENS:-16}
jmx_port=${CASSANDRA_JMX_PORT:-}
keep_data=${CASSANDRA_KEEP_DATA:-0}
auth=${CASSANDRA_AUTH:-0}
tls=${CASSANDRA_TLS:-0}

jar_dir="$cache/cassandra-$version"
pid_file="$run_dir/cassandra.pid"
log_dir="$run_dir/logs"
# The command line `up` started the node with; `restart` runs it again, so a restarted node has
# the same settings (and the same cassandra.yaml) as the one that crashed.
args_file="$run_dir/java.args"

say() { printf 'cassandra-node: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

case "$paxos" in v1|v2) ;; *) die "CASSANDRA_PAXOS must be v1 or v2, not '$paxos'";; esac
case "$version" in 5.0.*) ;; *) die "CASSANDRA_VERSION must be a 5.0.x release, not '$version'";; esac
case "$durable" in 0|1) ;; *) die "CASSANDRA_DURABLE must be 0 or 1, not '$durable'";; esac
case "$commitlog" in
  periodic|group|batch) ;;
  *) die "CASSANDRA_COMMITLOG must be periodic, group or batch, not '$commitlog'";;
esac
for d in "$commitlog_period" "$commitlog_window"; do
  [[ "$d" =~ ^[1-9][0-9]*(ms|s)$ ]] || die "commitlog period and window are durations such as 10000ms or 2ms, not '$d'"
done
if [ "$commitlog" != periodic ] && [ "$durable" != 1 ]; then
  die "CASSANDRA_COMMITLOG=$commitlog needs CASSANDRA_DURABLE=1: with the test speed-up skip_sync the commitlog is never fsynced"
fi

# fetch resolves the runtime classpath once per version; the marker file makes a partial
# download (interrupted mvn) look absent rather than complete.
fetch() {
  [ -f "$jar_dir/.complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Cassandra $version; or set CASSANDRA_HOSTS to an existing cluster"
  mkdir -p "$jar_dir"
  sed "s/@VERSION@/$version/" "$here/pom.xml.in" >"$jar_dir/pom.xml"
  say "resolving org.apache.cassandra:cassandra-all:$version from Maven Central into $jar_dir"
  local started=$SECONDS
  rm -rf "$jar_dir/lib"
  (cd "$jar_dir" && mvn -B -q -f pom.xml \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory=lib) >"$jar_dir/mvn.log" 2>&1 ||
    { tail -n 30 "$jar_dir/mvn.log" >&2; die "Maven could not resolve Cassandra $version"; }
  [ -f "$jar_dir/lib/cassandra-all-$version.jar" ] || die "cassandra-all-$version.jar missing after Maven ran"
  touch "$jar_dir/.complete"
  say "resolved $(ls "$jar_dir/lib" | wc -l) jars in $((SECONDS - started))s"
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q CassandraDaemon "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
    return 0
  fi
  say "removing stale PID file $pid_file (process ${pid:-?} is gone)"
  rm -f "$pid_file"
  return 1
}

cql_ready() {
  local flags=()
  # With auth on, the default superuser appears only after the node answers: wait for a login.
  [ "$auth" = 1 ] && flags+=(-username cassandra -password cassandra)
  [ "$tls" = 1 ] && flags+=(-tls-ca "$run_dir/tls/node.pem")
  (cd "$repo" && go run ./cmd/internal/cqlping -hosts "$address:$cql_port" "${flags[@]}" "$@")
}

# module_flags prints Cassandra 5.0's conf/jvm17-server.options: without these FileUtils
# refuses to start (the daemon and nodetool alike).
module_flags() {
  local exports="java.base/jdk.internal.misc java.management.rmi/com.sun.jmx.remote.internal.rmi
    java.management/com.sun.jmx.remote.security java.rmi/sun.rmi.registry java.rmi/sun.rmi.server
    java.sql/java.sql java.base/java.lang.ref jdk.unsupported/sun.misc jdk.attach/sun.tools.attach
    jdk.compiler/com.sun.tools.javac.file"
  local opens="java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref
    java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module
    java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch
    java.base/java.io java.base/java.lang.reflect java.base/java.lang java.base/java.util
    java.base/java.nio jdk.compiler/com.sun.tools.javac"
  for m in $exports; do printf -- '--add-exports=%s=ALL-UNNAMED\n' "$m"; done
  for m in $opens; do printf -- '--add-opens=%s=ALL-UNNAMED\n' "$m"; done
}

# memtable_row_overhead is the heap a memtable row costs beyond its data, which Cassandra
# otherwise estimates at every start by filling a skip list with 100,000 rows: 1.7 s of a 10 s
# start on a quiet machine, 10 s of a 62 s restart under the history checker's load. 180 bytes is
# what Cassandra 5.0.9 estimates on OpenJDK 17 here (its log's "Estimated SkipListMemtable row
# overhead: 180"), so memtables account and flush exactly as they did.
memtable_row_overhead=180

java_flags() {
  local lib="$jar_dir/lib" jamm
  module_flags
  printf '%s\n' -Xms"$heap" -Xmx"$heap" -Xss256k -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
    -Djava.net.preferIPv4Stack=true -Dchronicle.analytics.disable=true \
    -Djdk.attach.allowAttachSelf=true -Dio.netty.tryReflectionSetAccessible=true \
    -Dcassandra-foreground=yes -Dcassandra.config="file://$run_dir/cassandra.yaml" \
    -Dcassandra.logdir="$log_dir" -Dlogback.configurationFile="$here/logback.xml" \
    -Dcassandra.storagedir="$run_dir/data" -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.memtable.row_overhead_size="$memtable_row_overhead"
  jamm=$(ls "$lib"/jamm-*.jar 2>/dev/null | head -n 1 || true)
  [ -n "$jamm" ] && printf -- '-javaagent:%s\n' "$jamm"
  [ -n "$dc" ] && printf -- '-Dcassandra-rackdc.properties=file://%s\n' "$run_dir/cassandra-rackdc.properties"
  [ -n "$jmx_port" ] && printf -- '-Dcassandra.jmx.local.port=%s\n' "$jmx_port"
  # Create the default superuser at once instead of ten seconds after start.
  [ "$auth" = 1 ] && printf '%s\n' -Dcassandra.superuser_setup_delay_ms=0
  if [ "$durable" != 1 ]; then
    # Test-only speed-ups: never used for benchmarks or durability tests.
    printf '%s\n' -Dcassandra.skip_sync=true -Dcassandra.test.flush_local_schema_changes=false
  fi
}

write_yaml() {
  sed -e "s|@ADDRESS@|$address|g" -e "s|@CQL_PORT@|$cql_port|g" -e "s|@STORAGE_PORT@|$storage_port|g" -e "s|@SEEDS@|$seeds|g" -e "s|@DATA@|$run_dir/data|g" \
    -e "s|@PAXOS_VARIANT@|$paxos|g" -e "s|@COMMITLOG_SYNC@|$commitlog|g" -e "s|@COMMITLOG_TIMING@|$(commitlog_timing)|g" \
    -e "s|^num_tokens: .*|num_tokens: $num_tokens|" \
    "$here/cassandra.yaml.in" >"$run_dir/cassandra.yaml"
  if [ -n "$dc" ]; then
    sed -i 's|^endpoint_snitch: .*|endpoint_snitch: GossipingPropertyFileSnitch|' "$run_dir/cassandra.yaml"
    printf 'dc=%s\nrack=%s\n' "$dc" "$rack" >"$run_dir/cassandra-rackdc.properties"
  fi
}

# secure_yaml turns on what CASSANDRA_AUTH and CASSANDRA_TLS ask for in the written yaml. The
# TLS key pair is made fresh for each start (never stored in the repository), self-signed for
# the node's address and localhost.
secure_yaml() {
  local yaml="$run_dir/cassandra.yaml"
  if [ "$auth" = 1 ]; then
    sed -i 's|^authenticator: .*|authenticator: PasswordAuthenticator|' "$yaml"
  fi
  if [ "$tls" = 1 ]; then
    command -v keytool >/dev/null || die "CASSANDRA_TLS=1 needs keytool (part of the JDK)"
    local dir="$run_dir/tls" pass
    pass=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
    rm -rf "$dir" && mkdir -p "$dir" && chmod 700 "$dir"
    keytool -genkeypair -alias node -keyalg RSA -keysize 2048 -validity 2 -storetype PKCS12 \
      -dname "CN=cassdedup-test-node" -ext "SAN=IP:$address,DNS:localhost" \
      -keystore "$dir/keystore.p12" -storepass "$pass" -keypass "$pass" >/dev/null 2>&1 ||
      die "keytool could not make a key pair in $dir"
    keytool -exportcert -rfc -alias node -keystore "$dir/keystore.p12" -storepass "$pass" \
      -file "$dir/node.pem" >/dev/null 2>&1 || die "keytool could not export $dir/node.pem"
    cat >>"$yaml" <<YAML
client_encryption_options:
  enabled: true
  optional: false
  keystore: $dir/keystore.p12
  keystore_password: "$pass"
  store_type: PKCS12
  require_client_auth: false
YAML
  fi
}

# commitlog_timing is the one timing key the mode takes: Cassandra refuses to start when batch
# or group also finds commitlog_sync_period, or when periodic or group lacks its own.
commitlog_timing() {
  case "$commitlog" in
    periodic) echo "commitlog_sync_period: $commitlog_period" ;;
    group) echo "commitlog_sync_group_window: $commitlog_window" ;;
    batch) echo "# batch: each write waits for an fsync that starts as soon as writes are queued" ;;
  esac
}

# gone reports whether process $1 has ended (a zombie waiting to be reaped counts as ended)
# and its CQL port is closed: a killed JVM's threads may still hold the socket for a moment.
gone() {
  { ! kill -0 "$1" 2>/dev/null || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; } &&
    ! (exec 3<>"/dev/tcp/$address/$cql_port") 2>/dev/null
}

check_can_start() {
  if (exec 3<>"/dev/tcp/$address/$cql_port") 2>/dev/null; then
    die "$address:$cql_port is already taken by another process; set CASSANDRA_HOSTS to use it, or CASSANDRA_CQL_PORT to move"
  fi
  command -v java >/dev/null || die "Java 17 is needed to run Cassandra; or set CASSANDRA_HOSTS to an existing cluster"
  local major
  major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
  [ "$major" = 17 ] || die "Cassandra 5.0 here needs Java 17 (found ${major:-none}); put a JDK 17 first on PATH"
}

# launch runs the saved command line and waits until CQL answers. On failure it prints the end
# of the logs, stops the process and returns 1; the caller decides what happens to the data.
launch() {
  local started=$SECONDS args
  mapfile -t args <"$args_file"
  local in_netns=()
  [ -n "$netns" ] && in_netns=(ip netns exec "$netns")
  # setsid: the node must outlive make's shell, and stop only when asked by its PID.
  setsid "${in_netns[@]}" java "${args[@]}" >>"$log_dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$pid_file"
  if ! cql_ready -wait "${start_timeout}s" -pid "$(cat "$pid_file")"; then
    say "Cassandra did not answer CQL; last lines of $log_dir:"
    tail -n 40 "$log_dir/system.log" >&2 || true
    tail -n 20 "$log_dir/stdout.log" >&2 || true
    stop
    return 1
  fi
  say "ready after $((SECONDS - started))s"
}

# commitlog_of prints the commitlog settings of the node's cassandra.yaml on one line.
commitlog_of() {
  grep -E '^commitlog_sync' "$run_dir/cassandra.yaml" | tr '\n' ' ' | sed 's/ $//'
}

up() {
  local pid
  if pid=$(running_pid); then
    say "already running (pid $pid) on $address:$cql_port"
    return 0
  fi
  check_can_start
  fetch
  [ "$keep_data" = 1 ] || rm -rf "$run_dir/data"
  mkdir -p "$run_dir/data" "$log_dir"
  : >"$log_dir/system.log"
  : >"$log_dir/stdout.log"
  write_yaml
  secure_yaml
  { java_flags; printf '%s\n' -cp "$jar_dir/lib/*" org.apache.cassandra.service.CassandraDaemon; } >"$args_file"
  say "starting Cassandra $version (paxos $paxos, $(commitlog_of), auth $auth, tls $tls) on $address:$cql_port, logs in $log_dir"
  launch || { [ "$keep_data" = 1 ] || rm -rf "$run_dir/data"; exit 1; }
}

# restart starts the node again on the data it left, as an operator restarts a crashed node:
# Cassandra replays the commitlog up to its last sync.
restart() {
  local pid
  [ -f "$args_file" ] && [ -d "$run_dir/data" ] ||
    die "nothing to restart in $run_dir: start the node with up first"
  if pid=$(running_pid); then stop; fi
  check_can_start
  say "restarting on $run_dir/data with the settings of the last up ($(commitlog_of)) on $address:$cql_port"
  launch || die "the restart failed; the data stays in $run_dir/data"
}

# stop sends SIGTERM to the running node and waits for it to end (SIGKILL after 60 s).
stop() {
  local pid
  pid=$(running_pid) || { say "not running"; return 0; }
  say "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do gone "$pid" && break; sleep 0.5; done
  if ! gone "$pid"; then
    say "pid $pid ignored SIGTERM for 60s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

down() {
  stop
  if [ "$keep_data" = 1 ]; then
    say "keeping data in $run_dir/data"
  else
    rm -rf "$run_dir/data"
  fi
}

# nodetool runs Cassandra's nodetool against the node's local JMX port (CASSANDRA_JMX_PORT),
# inside its namespace when it has one. It logs through logback-tools.xml: the node's logback.xml
# writes to ${cassandra.logdir}, which a tool's JVM does not set, and logback would then create
# cassandra.logdir_IS_UNDEFINED/ in whatever folder the caller runs in.
nodetool() {
  [ -n "$jmx_port" ] || die "nodetool needs CASSANDRA_JMX_PORT (the node's JMX is off without it)"
  local in_netns=()
  [ -n "$netns" ] && in_netns=(ip netns exec "$netns")
  mapfile -t flags < <(module_flags)
  "${in_netns[@]}" java "${flags[@]}" -Xmx256m -Dlogback.configurationFile="$here/logback-tools.xml" \
    -cp "$jar_dir/lib/*" org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "$jmx_port" "$@"
}

# crash stops the node with SIGKILL: no shutdown hook runs, nothing is flushed or synced.
crash() {
  local pid
  pid=$(running_pid) || die "not running on $address:$cql_port"
  kill -KILL "$pid"
  for _ in $(seq 1 100); do gone "$pid" && break; sleep 0.1; done
  gone "$pid" || die "pid $pid still runs 10s after SIGKILL"
  rm -f "$pid_file"
  say "killed pid $pid with SIGKILL; its data stays in $run_dir/data for restart"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  restart) restart ;;
  kill) crash ;;
  status) running_pid >/dev/null && cql_ready ;;
  joined)
    [[ "${2:-}" =~ ^[0-9]+$ ]] || die "usage: node.sh joined N (the number of peers)"
    pid=$(running_pid) || die "no node runs for $run_dir"
    cql_ready -peers "$2" -wait "${start_timeout}s" -pid "$pid" ;;
  fetch) fetch ;;
  log) cat "$log_dir/system.log" ;;
  nodetool) shift; nodetool "$@" ;;
  *) die "usage: node.sh up|down|restart|kill|status|joined N|fetch|log|nodetool ARGS" ;;
esac
