#!/usr/bin/env bash
# redis.sh runs a throwaway Redis server on loopback for the benchmark's peers and their tests:
# its own port, its own directory under $TMPDIR (config, append-only file, log), removed again by
# `down`. It never touches the package's own service (redis-server.service on 6379) or its files.
# When redis-server is missing and this script runs as root on a Debian-like system, `up`
# installs it with apt-get (the Debian package redis-server); otherwise it says what is missing
# and exits non-zero.
#
#   redis.sh up      start it (a no-op when it already runs)
#   redis.sh down    stop it and remove its directory
#   redis.sh status  exit 0 when it answers PING
#   redis.sh addr    print host:port
#   redis.sh log     print the server's log
#
# Settings (environment):
#   PEERS_REDIS_ADDRESS  loopback address                      (default 127.0.0.1)
#   PEERS_REDIS_PORT     port                                  (default 16379)
#   PEERS_REDIS_FSYNC    appendfsync: always or everysec       (default always)
#                          always    the append-only file is fsynced before a write is
#                                    acknowledged: an acknowledged claim survives a crash of
#                                    the machine
#                          everysec  Redis's default: fsynced once a second, so a crash of the
#                                    machine (or the OS) loses up to a second or two of
#                                    acknowledged writes; a crash of the process alone loses
#                                    nothing already written to the file
#   PEERS_REDIS_RUN_DIR  config, data and log                  (default $TMPDIR/cassdedup-redis-<port>)
#
# Both settings run with the append-only file on and RDB snapshots off (save ""): AOF is the
# durable persistence Redis documents, and a snapshot's fork in a measured phase would show up
# as a latency spike that has nothing to do with the claims.
set -euo pipefail

address=${PEERS_REDIS_ADDRESS:-127.0.0.1}
port=${PEERS_REDIS_PORT:-16379}
fsync=${PEERS_REDIS_FSYNC:-always}
run_dir=${PEERS_REDIS_RUN_DIR:-${TMPDIR:-/tmp}/cassdedup-redis-$port}
pid_file="$run_dir/redis.pid"
log="$run_dir/redis.log"

say() { printf 'peers-redis: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[[ "$port" =~ ^[0-9]+$ ]] || die "PEERS_REDIS_PORT must be a port number, not '$port'"
case "$address" in 127.*|::1|localhost) ;; *) die "PEERS_REDIS_ADDRESS must be a loopback address, not '$address'";; esac
case "$fsync" in always|everysec) ;; *) die "PEERS_REDIS_FSYNC must be always or everysec, not '$fsync'";; esac

# ensure_installed installs the Debian package when redis-server is missing and it can.
ensure_installed() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    die "redis-server is not installed, and this script can install it only as root with apt-get: run 'apt-get install redis-server' (or your system's package) as root"
  fi
  say "redis-server is missing: apt-get install -y redis-server"
  local log="${TMPDIR:-/tmp}/cassdedup-redis-install.log"
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server) >"$log" 2>&1 ||
    { tail -n 20 "$log" >&2; die "apt-get could not install redis-server (its output: $log)"; }
  rm -f "$log"
  command -v redis-server >/dev/null || die "redis-server is still missing after apt-get install"
}

cli() { redis-cli -h "$address" -p "$port" "$@"; }

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid
  pid=$(cat "$pid_file")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

ready() { [ "$(cli ping 2>/dev/null)" = PONG ]; }

up() {
  ensure_installed
  if running_pid >/dev/null && ready; then return 0; fi
  if ready; then die "something else already answers on $address:$port: set PEERS_REDIS_PORT to a free port"; fi
  rm -rf "$run_dir"
  mkdir -p "$run_dir"
  cat >"$run_dir/redis.conf" <<CONF
# scripts/peers/redis.sh: a throwaway server for the benchmark (see the script's header)
bind $address
port $port
protected-mode yes
daemonize yes
pidfile $pid_file
logfile $log
dir $run_dir
save ""
appendonly yes
appendfsync $fsync
no-appendfsync-on-rewrite no
CONF
  redis-server "$run_dir/redis.conf" || die "redis-server did not start: see $log"
  for _ in $(seq 1 100); do ready && break; sleep 0.1; done
  ready || { tail -n 20 "$log" >&2; die "redis-server does not answer on $address:$port"; }
  say "Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') up at $address:$port, appendfsync $fsync (data in $run_dir)"
}

down() {
  local pid
  if pid=$(running_pid); then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -rf "$run_dir"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) running_pid >/dev/null && ready ;;
  addr) echo "$address:$port" ;;
  log) cat "$log" ;;
  *) die "usage: redis.sh up|down|status|addr|log" ;;
esac
