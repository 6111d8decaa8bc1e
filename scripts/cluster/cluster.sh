#!/usr/bin/env bash
# cluster.sh runs a Cassandra cluster whose links can fail: every node is a host of its own in a
# network namespace, joined to a router namespace by a veth pair, and the machine reaches them
# through one more veth into the router. Nothing leaves the machine: the addresses (10.99.0.0/16
# by default) exist only on links inside the namespaces this script creates, and the root
# namespace gets only a route to them. Needs root and iproute2; nodes start with
# scripts/cassandra/node.sh.
#
#   cluster.sh up             create the network, start the nodes (the first is the seed)
#   cluster.sh down           stop the nodes, delete the namespaces and the run directory
#   cluster.sh hosts          print the CQL contact points, comma-separated
#   cluster.sh topology       print "node address dc" for each node
#   cluster.sh kill N         SIGKILL node N (a crash: its data stays for restart)
#   cluster.sh stop N         SIGTERM node N and wait for it
#   cluster.sh restart N      start node N again on its data, wait until it answers CQL
#   cluster.sh isolate N      drop every packet between node N and everything else
#   cluster.sh cut N M        drop every packet between nodes N and M (clients still reach both)
#   cluster.sh heal           remove every isolation and cut
#   cluster.sh latency MS     round-trip time MS (decimals allowed; 0 for none) on every link
#   cluster.sh nodetool N ... run nodetool against node N (JMX inside its namespace)
#   cluster.sh log N          print node N's system.log
#
# Partitions are policy-routing rules in the router (`ip rule ... blackhole`): the router drops
# the packets silently, as a failed switch or a firewall would, so the nodes see timeouts, not
# refusals. Latency is added by linkdelay (this folder), which holds every forwarded packet for
# half the round-trip time, because not every kernel has netem.
#
# Settings (environment):
#   CLUSTER_NODES       nodes                                  (default 3)
#   CLUSTER_DCS         datacentres; nodes are split in order, the first ones take the extra
#                       nodes: 3 nodes in 2 DCs are dc1 = {1, 2}, dc2 = {3}  (default 1)
#   CLUSTER_LATENCY     round-trip time in ms on every link at up (default 0)
#   CLUSTER_HEAP        heap of each node                      (default 768M)
#   CLUSTER_PAXOS       paxos_variant v1 or v2                 (default v2)
#   CLUSTER_DURABLE     1: no test speed-ups: a killed node replays its commitlog, as the
#                       crash tests need (test speed-ups skip the syncs replay stops at) (default 1)
#   CLUSTER_COMMITLOG   commitlog_sync of each node: periodic, group or batch (default periodic;
#                       group and batch need CLUSTER_DURABLE=1)
#   CLUSTER_NUM_TOKENS  vnodes per node                        (default 4)
#   CLUSTER_PREFIX      prefix of namespace and link names     (default cdc)
#   CLUSTER_NET         first two octets of the addresses      (default 10.99)
#   CLUSTER_RUN_DIR     nodes' data, logs and PID files        (default $TMPDIR/cassdedup-cluster)
#   CLUSTER_START_TIMEOUT seconds a node may take to answer CQL at up or restart (default 600:
#                       a node restarted on its commitlog while the others serve a workload
#                       took over three minutes on a loaded two-core machine)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
node_sh="$repo/scripts/cassandra/node.sh"

run_dir=${CLUSTER_RUN_DIR:-${TMPDIR:-/tmp}/cassdedup-cluster}
# The commands after up use the settings up was given, whatever the caller's environment says.
if [ "${1:-}" != up ] && [ -f "$run_dir/settings" ]; then
  # shellcheck disable=SC1091
  . "$run_dir/settings"
fi

nodes=${CLUSTER_NODES:-3}
dcs=${CLUSTER_DCS:-1}
latency=${CLUSTER_LATENCY:-0}
heap=${CLUSTER_HEAP:-768M}
paxos=${CLUSTER_PAXOS:-v2}
durable=${CLUSTER_DURABLE:-1}
commitlog=${CLUSTER_COMMITLOG:-periodic}
num_tokens=${CLUSTER_NUM_TOKENS:-4}
start_timeout=${CLUSTER_START_TIMEOUT:-600}
prefix=${CLUSTER_PREFIX:-cdc}
net=${CLUSTER_NET:-10.99}

router="$prefix-router"
jmx_port=7199

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "CLUSTER_NODES must be 1 to 99, not '$nodes'"
[[ "$dcs" =~ ^[1-9]$ ]] && [ "$dcs" -le "$nodes" ] || die "CLUSTER_DCS must be 1 to CLUSTER_NODES, not '$dcs'"
[[ "$net" =~ ^10\.[0-9]{1,3}$ ]] || die "CLUSTER_NET must be 10.x (a private range), not '$net'"
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "CLUSTER_PREFIX must be 1 to 6 lowercase letters or digits, not '$prefix'"

ns_of() { echo "$prefix-n$1"; }
addr_of() { echo "$net.$1.2"; }
dc_of() { echo "dc$(( ($1 - 1) * dcs / nodes + 1 ))"; }
in_router() { ip netns exec "$router" "$@"; }

check_node() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$nodes" ] || die "node must be 1 to $nodes, not '${1:-}'"
}

# node runs node.sh for node $1 with the cluster's settings.
node() {
  local i=$1
  shift
  CASSANDRA_NETNS=$(ns_of "$i") CASSANDRA_ADDRESS=$(addr_of "$i") CASSANDRA_SEEDS="$(addr_of 1):7000" \
    CASSANDRA_DC=$(dc_of "$i") CASSANDRA_RACK=rack1 CASSANDRA_HEAP=$heap CASSANDRA_PAXOS=$paxos \
    CASSANDRA_DURABLE=$durable CASSANDRA_COMMITLOG=$commitlog CASSANDRA_NUM_TOKENS=$num_tokens CASSANDRA_JMX_PORT=$jmx_port \
    CASSANDRA_START_TIMEOUT=$start_timeout \
    CASSANDRA_RUN_DIR="$run_dir/n$i" "$node_sh" "$@"
}

pid_of() { cat "$run_dir/n$1/cassandra.pid" 2>/dev/null || true; }

network_up() {
  ip netns add "$router"
  in_router ip link set lo up
  in_router sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward; echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter; echo 0 >/proc/sys/net/ipv4/conf/default/rp_filter'
  # The machine's own link into the router.
  ip link add "${prefix}host" type veth peer name host0 netns "$router"
  ip addr add "$net.0.1/24" dev "${prefix}host"
  ip link set "${prefix}host" up
  in_router ip addr add "$net.0.254/24" dev host0
  in_router ip link set host0 up
  ip route add "$net.0.0/16" via "$net.0.254" dev "${prefix}host"
  in_router ip rule add pref 200 iif host0 lookup 100
  local i ns
  for i in $(seq 1 "$nodes"); do
    ns=$(ns_of "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "n$i" netns "$router" type veth peer name eth0 netns "$ns"
    ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$net.$i.1"
    in_router ip addr add "$net.$i.1/24" dev "n$i"
    in_router ip link set "n$i" up
    # Traffic entering from a node consults table 100 first: the delay device when latency is on.
    in_router ip rule add pref 200 iif "n$i" lookup 100
  done
}

set_latency() {
  local rtt=$1 pid_file="$run_dir/linkdelay.pid"
  [[ "$rtt" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "latency must be a number of milliseconds, not '$rtt'"
  if [ -f "$pid_file" ]; then
    kill -TERM "$(cat "$pid_file")" 2>/dev/null || true
    for _ in $(seq 1 50); do in_router ip link show delay0 >/dev/null 2>&1 || break; sleep 0.1; done
    rm -f "$pid_file"
  fi
  if [ "$(awk -v r="$rtt" 'BEGIN { print (r > 0) }')" = 1 ]; then
    local one_way_us
    one_way_us=$(awk -v r="$rtt" 'BEGIN { printf "%d", r * 500 }')
    (cd "$repo" && go build -o "$run_dir/linkdelay" ./scripts/cluster/linkdelay)
    setsid ip netns exec "$router" "$run_dir/linkdelay" -dev delay0 -delay "${one_way_us}us" \
      >>"$run_dir/linkdelay.log" 2>&1 </dev/null &
    echo $! >"$pid_file"
    for _ in $(seq 1 100); do in_router ip link show delay0 >/dev/null 2>&1 && break; sleep 0.1; done
    in_router ip link show delay0 >/dev/null 2>&1 || die "linkdelay did not create its device: $(cat "$run_dir/linkdelay.log")"
    in_router sh -c 'echo 0 >/proc/sys/net/ipv4/conf/delay0/rp_filter'
    in_router ip link set delay0 up
    in_router ip route replace default dev delay0 table 100
  fi
  echo "$rtt" >"$run_dir/latency"
  say "round-trip time on every link: ${rtt}ms (the router holds each packet for half of it)"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
  if ip netns list | grep -q "^$router\b"; then
    die "$router exists: a cluster with prefix $prefix is up (cluster.sh down first, or another CLUSTER_PREFIX)"
  fi
  mkdir -p "$run_dir"
  printf 'CLUSTER_%s=%q\n' NODES "$nodes" DCS "$dcs" HEAP "$heap" PAXOS "$paxos" DURABLE "$durable" COMMITLOG "$commitlog" \
    NUM_TOKENS "$num_tokens" PREFIX "$prefix" NET "$net" >"$run_dir/settings"
  trap 'say "up failed; tearing down"; down' ERR
  network_up
  set_latency "$latency"
  CASSANDRA_DURABLE=$durable CASSANDRA_COMMITLOG=$commitlog "$node_sh" fetch
  local i started=$SECONDS
  node 1 up
  # With auto_bootstrap off, the other nodes can join at once.
  local pids=()
  for i in $(seq 2 "$nodes"); do node "$i" up & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
  # Each node answers CQL before gossip has told it of the others; until then it refuses a
  # keyspace with replicas in a datacentre it has not heard of.
  for i in $(seq 1 "$nodes"); do node "$i" joined $((nodes - 1)); done
  trap - ERR
  say "$nodes nodes in $dcs datacentre(s) up after $((SECONDS - started))s: $(hosts)"
}

down() {
  local i
  for i in $(seq 1 "$nodes"); do
    [ -d "$run_dir/n$i" ] && node "$i" down || true
  done
  if [ -f "$run_dir/linkdelay.pid" ]; then kill -TERM "$(cat "$run_dir/linkdelay.pid")" 2>/dev/null || true; fi
  ip route del "$net.0.0/16" 2>/dev/null || true
  ip link del "${prefix}host" 2>/dev/null || true
  for i in $(seq 1 "$nodes"); do ip netns del "$(ns_of "$i")" 2>/dev/null || true; done
  ip netns del "$router" 2>/dev/null || true
  rm -rf "$run_dir"
  say "down"
}

hosts() {
  local i out=()
  for i in $(seq 1 "$nodes"); do out+=("$(addr_of "$i"):9042"); done
  (IFS=,; echo "${out[*]}")
}

# rule adds or deletes the pair of blackhole rules between two address ranges.
drop_between() {
  in_router ip rule add pref 100 from "$1" to "$2" blackhole
  in_router ip rule add pref 100 from "$2" to "$1" blackhole
}

isolate() {
  check_node "$1"
  drop_between "$(addr_of "$1")" "$net.0.0/16"
  say "node $1 isolated"
}

cut() {
  check_node "$1"
  check_node "$2"
  drop_between "$(addr_of "$1")" "$(addr_of "$2")"
  say "link between nodes $1 and $2 cut"
}

heal() {
  while in_router ip rule del pref 100 2>/dev/null; do :; done
  say "healed"
}

kill_node() {
  check_node "$1"
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || die "node $1 is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  say "node $1 (pid $pid) killed"
}

stop_node() {
  check_node "$1"
  CASSANDRA_KEEP_DATA=1 node "$1" down
}

restart() {
  check_node "$1"
  CASSANDRA_KEEP_DATA=1 node "$1" up
}

nodetool() {
  check_node "$1"
  local i=$1
  shift
  node "$i" nodetool "$@"
}

topology() {
  local i
  for i in $(seq 1 "$nodes"); do echo "$i $(addr_of "$i") $(dc_of "$i")"; done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  hosts) hosts ;;
  topology) topology ;;
  kill) kill_node "${2:-}" ;;
  stop) stop_node "${2:-}" ;;
  restart) restart "${2:-}" ;;
  isolate) isolate "${2:-}" ;;
  cut) cut "${2:-}" "${3:-}" ;;
  heal) heal ;;
  latency) set_latency "${2:-}" ;;
  nodetool) shift; nodetool "$@" ;;
  log) check_node "${2:-}"; node "$2" log ;;
  *) die "usage: cluster.sh up|down|hosts|topology|kill N|stop N|restart N|isolate N|cut N M|heal|latency MS|nodetool N ...|log N" ;;
esac
