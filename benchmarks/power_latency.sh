#!/bin/bash
# Power transitions on emulated hosts (needs root), with the profile's firmware delays set to 0
# so that what is measured is WattDB's own part:
#   suspended -> serving: a host suspends holding data (its agent freezes it), a magic packet
#                wakes it, time until a query of its data answers;
#   off -> serving:       a host holding data loses power (hard off), IPMI powers it on, time
#                until a query of its data answers (process start + RocksDB recovery +
#                registration);
#   overhead:             CPU of an idle node (telemetry, heartbeats) and of the idle master
#                (power monitor, meters), in percent of one core, over IDLE seconds.
#   usage: benchmarks/power_latency.sh [ROUNDS=10] [IDLE=30]
set -u
ROUNDS=${1:-10}
IDLE=${2:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/bin
[ "$(id -u)" -eq 0 ] || { echo "power_latency.sh: needs root (network namespaces, cgroups)" >&2; exit 2; }
DIR=$(mktemp -d /tmp/wattdb_power.XXXXXX)
PORT=$((27000 + RANDOM % 2000))
NET=$((100 + RANDOM % 100))
cat > "$DIR/cluster.toml" <<TOML
[cluster]
data_dir = "$DIR/data"
telemetry_interval_ms = 1000
heartbeat_timeout_ms = 3000
[master]
pg_port = $PORT
cluster_port = $((PORT + 1))
[auth]
method = "trust"
[hosts]
mode = "emulated"
subnet = "10.213.$NET"
bridge = "wdbb$NET"
[profile.atom]
cpus = 0.5
resume_ms = 0
boot_ms = 0
[power]
meter_interval_ms = 1000
[[node]]
id = 1
port = 7101
power = "ipmi"
meter = "ipmi-dcmi"
ipmi = { password = "bench" }
[[node]]
id = 2
port = 7102
power = "wol"
TOML
"$BIN/wattdb-master" --manage-nodes --config "$DIR/cluster.toml" --log-level warn > "$DIR/master.log" 2>&1 &
MASTER=$!
trap 'kill $MASTER 2>/dev/null; wait $MASTER 2>/dev/null; rm -rf "$DIR"' EXIT
PSQL="psql -X -q -At -h 127.0.0.1 -p $PORT -U wattdb -d wattdb"
for i in $(seq 1 300); do
  [ "$($PSQL -c "SELECT count(*) FROM wattdb_nodes WHERE state = 'up'" 2>/dev/null)" = 2 ] && break
  sleep 0.1
done
$PSQL -c "CREATE TABLE t (k INT PRIMARY KEY, v INT)" \
      -c "INSERT INTO t SELECT g, g FROM generate_series(1, 20000) g" || exit 1
SEG=$($PSQL -c "SELECT min(segment_id) FROM wattdb_segments")
now_ms() { date +%s%3N; }
# Waits until a count over the whole table (so over both nodes) answers.
serve() { until [ "$($PSQL -c 'SELECT count(*) FROM t' 2>/dev/null)" = 20000 ]; do :; done; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
agent() { "$BIN/wattdb-host" ctl --dir "$DIR/data/lab/h$1" "$2"; }
IPMI="ipmitool -I lanplus -C 3 -H 10.213.$NET.11 -U admin -P bench"

# suspended -> serving (node 2, Wake-on-LAN)
$PSQL -c "ALTER TABLE t MOVE SEGMENT $SEG TO NODE 2" > /dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  agent 2 suspend > /dev/null
  until [ "$($PSQL -c "SELECT state FROM wattdb_nodes WHERE node_id = 2")" = down ]; do sleep 0.05; done
  t0=$(now_ms)
  python3 - "10.213.$NET.255" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.sendto(b'\xff' * 6 + bytes.fromhex('525400570002') * 16, (sys.argv[1], 9))
PY
  serve
  echo $(( $(now_ms) - t0 ))
done > "$DIR/resume.txt"

# off -> serving (node 1, IPMI): drained and powered off through its BMC; POWER ON boots it,
# then a segment moves to it and the table is read.
$PSQL -c "ALTER TABLE t MOVE SEGMENT $SEG TO NODE 2" > /dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  $PSQL -c "ALTER NODE 1 DRAIN" -c "ALTER NODE 1 POWER OFF" > /dev/null 2>&1
  [ "$(agent 1 status)" = off ] || echo "host 1 did not power off" >&2
  t0=$(now_ms)
  $PSQL -c "ALTER NODE 1 POWER ON" > /dev/null
  t1=$(now_ms)
  $PSQL -c "ALTER TABLE t MOVE SEGMENT $SEG TO NODE 1" > /dev/null 2>&1
  serve
  echo "$(( t1 - t0 )) $(( $(now_ms) - t0 ))"
done > "$DIR/boot.txt"

# overhead: idle CPU of a node and of the master
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
NODE_PID=$(cat "$DIR/data/n2/node.pid")
n0=$(ticks "$NODE_PID"); m0=$(ticks "$MASTER")
sleep "$IDLE"
n1=$(ticks "$NODE_PID"); m1=$(ticks "$MASTER")
HZ=$(getconf CLK_TCK)

echo "suspended -> serving (resume delay 0), ms over $ROUNDS rounds: median $(median < "$DIR/resume.txt"), all: $(tr '\n' ' ' < "$DIR/resume.txt")"
echo "off -> registered (ALTER NODE POWER ON through IPMI, boot delay 0), ms: median $(cut -d' ' -f1 "$DIR/boot.txt" | median), all: $(cut -d' ' -f1 "$DIR/boot.txt" | tr '\n' ' ')"
echo "off -> serving a query of a segment moved to it, ms: median $(cut -d' ' -f2 "$DIR/boot.txt" | median), all: $(cut -d' ' -f2 "$DIR/boot.txt" | tr '\n' ' ')"
awk -v n=$((n1 - n0)) -v m=$((m1 - m0)) -v hz="$HZ" -v s="$IDLE" \
  'BEGIN { printf "idle CPU over %d s (telemetry every 1 s, meters every 1 s): node %.2f%%, master %.2f%% of one core\n", s, 100 * n / hz / s, 100 * m / hz / s }'
