#!/usr/bin/env bash
# postgres.sh runs a throwaway PostgreSQL server on loopback for the benchmark's peers and their
# tests: its own cluster (initdb) in a data directory under $TMPDIR, its own port, its own socket
# directory, started with pg_ctl and removed again by `down`. It never touches a system service,
# /var/lib/postgresql, /var/run/postgresql or another server.
#
#   postgres.sh up      initdb and start (a no-op when it already runs); prints nothing
#   postgres.sh down    stop it (fast shutdown) and remove its directory
#   postgres.sh status  exit 0 when it accepts connections
#   postgres.sh url     print the connection URL (postgres://...) the tests and lwtbench take
#   postgres.sh log     print the server's log
#
# Settings (environment):
#   PEERS_PG_ADDRESS  loopback address to listen on            (default 127.0.0.1)
#   PEERS_PG_PORT     port                                     (default 15432)
#   PEERS_PG_RUN_DIR  data, socket and log                     (default $TMPDIR/cassdedup-postgres-<port>)
#   PEERS_PG_BIN      directory of initdb, pg_ctl, createdb    (default: the newest /usr/lib/postgresql/*/bin,
#                     else the PATH's)
#   PEERS_PG_USER     OS user that runs the server when this script runs as root (initdb and
#                     postgres refuse root)                    (default nobody)
#
# The server is durable as in production: fsync, synchronous_commit and full_page_writes on
# (Postgres's defaults, written out so a reader sees them). The rest is what a Postgres expert
# sets for a short write-heavy benchmark of many small transactions on a small machine:
#   shared_buffers 512MB     the whole working set (a few hundred thousand rows and their
#                            indexes) stays in Postgres's cache; the default 128MB would evict
#   max_connections 200      64 benchmark workers, the tests' pools and headroom
#   wal_buffers 16MB         the ceiling the default (1/32 of shared_buffers) reaches anyway
#   max_wal_size 4GB, checkpoint_timeout 15min, checkpoint_completion_target 0.9
#                            no checkpoint storm (and no full-page-write burst after it) inside a
#                            measured phase; durability is unchanged (WAL is fsynced at commit)
#   wal_compression on       smaller full-page images after a checkpoint
#   jit off                  nothing to compile in one-row statements; JIT only adds latency
# Group commit is Postgres's own (one WAL flush carries every commit waiting for it); commit_delay
# stays 0, as the docs advise unless a measurement says otherwise. wal_level stays replica (a
# production primary keeps its standby possible).
set -euo pipefail

address=${PEERS_PG_ADDRESS:-127.0.0.1}
port=${PEERS_PG_PORT:-15432}
run_dir=${PEERS_PG_RUN_DIR:-${TMPDIR:-/tmp}/cassdedup-postgres-$port}
os_user=${PEERS_PG_USER:-nobody}
db_user=cassdedup
db_name=peers
data="$run_dir/data"
log="$run_dir/postgres.log"

say() { printf 'peers-postgres: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[[ "$port" =~ ^[0-9]+$ ]] || die "PEERS_PG_PORT must be a port number, not '$port'"
case "$address" in 127.*|::1|localhost) ;; *) die "PEERS_PG_ADDRESS must be a loopback address, not '$address'";; esac

find_bin() {
  if [ -n "${PEERS_PG_BIN:-}" ]; then echo "$PEERS_PG_BIN"; return; fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$newest" ] && [ -x "$newest/postgres" ]; then echo "$newest"; return; fi
  command -v pg_ctl >/dev/null && { dirname "$(command -v pg_ctl)"; return; }
  die "no PostgreSQL server binaries (initdb, pg_ctl, postgres): install PostgreSQL (Debian: apt-get install postgresql) or set PEERS_PG_BIN"
}
bin=$(find_bin)
for b in initdb pg_ctl postgres pg_isready createdb; do
  [ -x "$bin/$b" ] || die "$bin/$b is missing: a PostgreSQL server install has it (set PEERS_PG_BIN to its directory)"
done

# as_owner runs a command as the server's OS user: ourselves, or PEERS_PG_USER when we are root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$os_user" -- "$@"; else "$@"; fi
}

ready() { "$bin/pg_isready" -q -h "$address" -p "$port" -U "$db_user" -d "$db_name" -t 2; }

url() { echo "postgres://$db_user@$address:$port/$db_name?sslmode=disable"; }

up() {
  if [ -f "$data/postmaster.pid" ] && ready; then return 0; fi
  if "$bin/pg_isready" -q -h "$address" -p "$port" -t 1; then
    die "something else already listens on $address:$port: set PEERS_PG_PORT to a free port"
  fi
  rm -rf "$run_dir"
  mkdir -p "$run_dir"
  if [ "$(id -u)" = 0 ]; then
    id "$os_user" >/dev/null 2>&1 || die "no OS user '$os_user' to run Postgres as (initdb and postgres refuse root): set PEERS_PG_USER"
    chown "$os_user" "$run_dir"
    as_owner test -w "$run_dir" || die "user $os_user cannot write $run_dir (a parent directory is closed to it): set PEERS_PG_RUN_DIR or TMPDIR"
  fi
  as_owner "$bin/initdb" -D "$data" -U "$db_user" --auth=trust -E UTF8 --locale=C.UTF-8 >"$run_dir/initdb.log" 2>&1 ||
    { cat "$run_dir/initdb.log" >&2; die "initdb failed"; }
  # Loopback only, and only this cluster's own user and database: trust is safe here.
  printf 'local all %s trust\nhost all %s %s/32 trust\nhost all %s ::1/128 trust\n' \
    "$db_user" "$db_user" "$address" "$db_user" | as_owner tee "$data/pg_hba.conf" >/dev/null
  as_owner tee -a "$data/postgresql.conf" >/dev/null <<CONF

# scripts/peers/postgres.sh: durable, tuned for the benchmark (see the script's header)
listen_addresses = '$address'
port = $port
unix_socket_directories = '$run_dir'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 512MB
wal_buffers = 16MB
max_wal_size = 4GB
checkpoint_timeout = 15min
checkpoint_completion_target = 0.9
wal_compression = on
jit = off
CONF
  as_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null ||
    { tail -n 30 "$log" >&2; die "postgres did not start on $address:$port"; }
  "$bin/createdb" -h "$address" -p "$port" -U "$db_user" "$db_name" || die "createdb $db_name failed"
  say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') up at $(url) (data in $data)"
}

down() {
  if [ -f "$data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null || say "pg_ctl stop failed: see $log"
  fi
  rm -rf "$run_dir"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) [ -f "$data/postmaster.pid" ] && ready ;;
  url) url ;;
  log) cat "$log" ;;
  *) die "usage: postgres.sh up|down|status|url|log" ;;
esac
