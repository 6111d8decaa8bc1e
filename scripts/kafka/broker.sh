#!/usr/bin/env bash
# broker.sh runs one real Apache Kafka node (broker and controller in one process, KRaft mode)
# on loopback without Docker: it resolves kafka_2.13 and its runtime dependencies from Maven
# Central into a cache outside the repository, formats the KRaft storage, starts kafka.Kafka
# and waits until the broker answers a Kafka request.
#
#   broker.sh up       start the broker (a no-op when it already runs); on the data kept by
#                      the last down when KAFKA_KEEP_DATA=1, else on empty storage
#   broker.sh down     stop it by its PID and remove its data (KAFKA_KEEP_DATA=1 keeps it)
#   broker.sh status   exit 0 when the broker runs and answers
#   broker.sh fetch    only resolve the jars
#   broker.sh log      print the broker's log file
#
# Settings (environment):
#   KAFKA_VERSION         release from Maven Central                (default 4.3.1)
#   KAFKA_ADDRESS         loopback address to bind                  (default 127.0.0.1)
#   KAFKA_PORT            client (PLAINTEXT) port                   (default 19092)
#   KAFKA_CONTROLLER_PORT KRaft controller port                     (default 19093)
#   KAFKA_HEAP            JVM heap                                  (default 512m)
#   KAFKA_RUN_DIR         PID file, data and logs                   (default $TMPDIR/cassdedup-kafka-<address>-<port>)
#   CASSDEDUP_CACHE       jar cache                                 (default $XDG_CACHE_HOME/cassdedup)
#   KAFKA_START_TIMEOUT   seconds to wait for the broker            (default 120)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

version=${KAFKA_VERSION:-4.3.1}
address=${KAFKA_ADDRESS:-127.0.0.1}
port=${KAFKA_PORT:-19092}
controller_port=${KAFKA_CONTROLLER_PORT:-19093}
heap=${KAFKA_HEAP:-512m}
run_dir=${KAFKA_RUN_DIR:-${TMPDIR:-/tmp}/cassdedup-kafka-$address-$port}
cache=${CASSDEDUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cassdedup}
start_timeout=${KAFKA_START_TIMEOUT:-120}

jar_dir="$cache/kafka-$version"
pid_file="$run_dir/kafka.pid"
log_dir="$run_dir/logs"
plugin=org.apache.maven.plugins:maven-dependency-plugin:3.6.1

say() { printf 'kafka-broker: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

case "$version" in [4-9].*) ;; *) die "KAFKA_VERSION must be a KRaft-only release (4.x or later), not '$version'";; esac
case "$address" in 127.*) ;; *) die "KAFKA_ADDRESS must be a loopback address (127.x.x.x), not '$address'";; esac

# fetch resolves the runtime classpath once per version; the marker file makes a partial
# download (interrupted mvn) look absent rather than complete. The POM of kafka_2.13 has no
# logging backend for SLF4J; the release tarball adds log4j's, of the same version as the
# log4j-core it ships, and so does this.
fetch() {
  [ -f "$jar_dir/.complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Kafka $version"
  mkdir -p "$jar_dir"
  sed "s/@VERSION@/$version/" "$here/pom.xml.in" >"$jar_dir/pom.xml"
  say "resolving org.apache.kafka:kafka_2.13:$version from Maven Central into $jar_dir"
  local started=$SECONDS log4j
  rm -rf "$jar_dir/lib"
  (cd "$jar_dir" && mvn -B -q -f pom.xml "$plugin:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory=lib) >"$jar_dir/mvn.log" 2>&1 ||
    { tail -n 30 "$jar_dir/mvn.log" >&2; die "Maven could not resolve Kafka $version"; }
  [ -f "$jar_dir/lib/kafka_2.13-$version.jar" ] || die "kafka_2.13-$version.jar missing after Maven ran"
  log4j=$(cd "$jar_dir/lib" && ls log4j-core-*.jar | sed -n 's/^log4j-core-\(.*\)\.jar$/\1/p' | head -n 1)
  [ -n "$log4j" ] || die "no log4j-core in Kafka $version's dependencies"
  (cd "$jar_dir" && mvn -B -q -f pom.xml "$plugin:copy" \
    -Dartifact="org.apache.logging.log4j:log4j-slf4j-impl:$log4j" -DoutputDirectory=lib) >>"$jar_dir/mvn.log" 2>&1 ||
    { tail -n 30 "$jar_dir/mvn.log" >&2; die "Maven could not resolve log4j-slf4j-impl $log4j"; }
  touch "$jar_dir/.complete"
  say "resolved $(ls "$jar_dir/lib" | wc -l) jars in $((SECONDS - started))s"
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q kafka.Kafka "/proc/$pid/cmdline" 2>/dev/null; then
    echo "$pid"
    return 0
  fi
  say "removing stale PID file $pid_file (process ${pid:-?} is gone)"
  rm -f "$pid_file"
  return 1
}

# answers sends one ApiVersions request (API key 18, version 0, correlation id 7) and checks
# that the reply carries that correlation id and error code 0: the broker serves requests, not
# merely accepts connections.
answers() {
  local reply
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf "\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x07\x00\x02hc" >&3
    head -c 10 <&3 | od -An -tx1 | tr -d " \n"' _ "$address" "$port" 2>/dev/null) || return 1
  # size (4 bytes), correlation id 7, error code 0
  [ "${reply:8:12}" = "000000070000" ]
}

java_cmd() {
  printf '%s\n' -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true \
    -Dkafka.logs.dir="$log_dir" -Dlog4j2.configurationFile="$here/log4j2.properties" \
    -cp "$jar_dir/lib/*"
}

write_properties() {
  sed -e "s|@ADDRESS@|$address|g" -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
    -e "s|@DATA@|$run_dir/data|g" "$here/server.properties.in" >"$run_dir/server.properties"
}

up() {
  local pid
  if pid=$(running_pid); then
    say "already running (pid $pid) on $address:$port"
    return 0
  fi
  for p in "$port" "$controller_port"; do
    if (exec 3<>"/dev/tcp/$address/$p") 2>/dev/null; then
      die "$address:$p is already taken by another process; set KAFKA_PORT/KAFKA_CONTROLLER_PORT to move"
    fi
  done
  command -v java >/dev/null || die "Java 17 or later is needed to run Kafka $version"
  fetch
  mkdir -p "$log_dir"
  : >"$log_dir/kafka.log"
  write_properties
  mapfile -t flags < <(java_cmd)
  # KAFKA_KEEP_DATA=1 restarts on the data a `KAFKA_KEEP_DATA=1 down` kept (a broker restart);
  # otherwise the broker starts empty.
  if [ "${KAFKA_KEEP_DATA:-0}" = 1 ] && [ -f "$run_dir/data/meta.properties" ]; then
    say "restarting on the data in $run_dir/data"
  else
    rm -rf "$run_dir/data"
    mkdir -p "$run_dir/data"
    local cluster_id
    cluster_id=$(java "${flags[@]}" kafka.tools.StorageTool random-uuid 2>>"$log_dir/stdout.log")
    java "${flags[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$run_dir/server.properties" \
      >>"$log_dir/stdout.log" 2>&1 || { tail -n 20 "$log_dir/stdout.log" >&2; die "formatting the KRaft storage failed"; }
  fi
  local started=$SECONDS
  say "starting Kafka $version (KRaft, one node) on $address:$port, logs in $log_dir"
  # setsid: the broker must outlive make's shell, and stop only when asked by its PID.
  setsid java "${flags[@]}" kafka.Kafka "$run_dir/server.properties" >>"$log_dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$pid_file"
  pid=$(cat "$pid_file")
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null || [ $((SECONDS - started)) -ge "$start_timeout" ]; then
      say "Kafka did not answer on $address:$port; last lines of $log_dir:"
      tail -n 40 "$log_dir/kafka.log" >&2 || true
      tail -n 20 "$log_dir/stdout.log" >&2 || true
      down
      exit 1
    fi
    sleep 0.5
  done
  say "ready after $((SECONDS - started))s"
}

down() {
  local pid
  if pid=$(running_pid); then
    say "stopping pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      say "pid $pid ignored SIGTERM for 60s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file"
  else
    say "not running"
  fi
  if [ "${KAFKA_KEEP_DATA:-0}" = 1 ]; then
    say "keeping data in $run_dir/data"
  else
    rm -rf "$run_dir/data"
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) running_pid >/dev/null && answers ;;
  fetch) fetch ;;
  log) cat "$log_dir/kafka.log" ;;
  *) die "usage: broker.sh up|down|status|fetch|log" ;;
esac
