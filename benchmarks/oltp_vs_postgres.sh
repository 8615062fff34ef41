#!/bin/bash
# OLTP throughput of a 1-node WattDB cluster next to PostgreSQL 15 on the same machine, same
# scale, same clients, in one run: pgbench's built-in TPC-B-like and select-only scripts and
# sysbench oltp_read_write. Both sides commit durably (WattDB sync_commit, PostgreSQL fsync and
# synchronous_commit on). WattDB runs at its default READ COMMITTED, as PostgreSQL does;
# PostgreSQL also at REPEATABLE READ for reference. pgbench retries serialization failures.
#
# Usage: benchmarks/oltp_vs_postgres.sh [--scale N] [--clients N] [--time SEC] [--build DIR]
#                                       [--nodes N] [--no-postgres] [--forwarder] [--hosted]
#                                       [--rounds N] [--replicas N] [--follower-reads]
# --rounds: each system is loaded once, then every workload runs N times, the systems taking
# turns (WattDB, PostgreSQL, WattDB, ...), so that the machine's drift hits both alike; the
# table shows medians and the range of the per-round ratios (default 1).
# --nodes: WattDB nodes (default 1); after each load the run waits for the segments to stop
# splitting and moving (and, with --replicas N, the cluster's replication_factor, for every
# segment to have its copies; --follower-reads: WattDB's sessions SET wattdb_follower_reads = on). --hosted: node 1 lives in the master process (power = "master"). --forwarder: also PostgreSQL (read committed) behind
# wattdb-hop-proxy, a process that only copies bytes, reached over a Unix-domain socket: what
# one more process per statement costs, before any work (a master in front of a node pays it).
# Writes results.csv and the raw outputs under a fresh directory it names at the end.
set -euo pipefail
SCALE=4 CLIENTS=4 TIME=15 BUILD=build NODES=1 POSTGRES=1 FORWARDER=0 HOSTED=0 ROUNDS=1 REPLICAS=1 WOPTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --no-postgres) POSTGRES=0; shift ;;
    --forwarder) FORWARDER=1; shift ;;
    --hosted) HOSTED=1; shift ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --replicas) REPLICAS=$2; shift 2 ;;
    --follower-reads) WOPTS="-c wattdb_follower_reads=on"; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
PGBIN=/usr/lib/postgresql/15/bin
OUT=$(mktemp -d /tmp/wattdb_oltp.XXXXXX)
chmod 777 "$OUT"
WPORT=56433 PPORT=56499 FPORT=56498
export PGSSLMODE=disable

cat > "$OUT/wattdb.toml" <<TOML
[cluster]
data_dir = "$OUT/wattdb"
replication_factor = $REPLICAS
[master]
pg_port = $WPORT
cluster_port = 56400
TOML
for i in $(seq 1 "$NODES"); do
  printf '[[node]]\nid = %d\nport = %d\n' "$i" $((56400 + i)) >> "$OUT/wattdb.toml"
  if [ "$HOSTED" = 1 ] && [ "$i" = 1 ]; then echo 'power = "master"' >> "$OUT/wattdb.toml"; fi
done
AS=""; [ "$(id -u)" -eq 0 ] && AS="runuser -u postgres --"
MASTER=""; FWD=""; AUTOGROUP=""
cleanup() {
  [ -z "$AUTOGROUP" ] || echo "$AUTOGROUP" > /proc/sys/kernel/sched_autogroup_enabled || true
  [ -z "$MASTER" ] || { kill $MASTER 2>/dev/null; wait $MASTER 2>/dev/null; } || true
  [ -z "$FWD" ] || { kill $FWD 2>/dev/null; wait $FWD 2>/dev/null; } || true
  $AS "$PGBIN/pg_ctl" -D "$OUT/pg" stop -m fast > /dev/null 2>&1 || true
}
trap cleanup EXIT
# The kernel's autogroup scheduling shares the CPU fairly between sessions, not threads: every
# PostgreSQL backend starts a session of its own, the master's threads share one (that of this
# script and pgbench, or their own), so the servers would get unlike shares of the two cores
# whichever way the master is started. As root the run turns autogroups off (every thread
# weighs the same) and restores the setting at the end. A process takes its group when it
# starts: hence before either server starts.
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/kernel/sched_autogroup_enabled ]; then
  AUTOGROUP=$(cat /proc/sys/kernel/sched_autogroup_enabled)
  echo 0 > /proc/sys/kernel/sched_autogroup_enabled
fi
"$BUILD/bin/wattdb-master" --config "$OUT/wattdb.toml" --manage-nodes --log-level warn > "$OUT/wattdb.log" 2>&1 &
MASTER=$!
$AS "$PGBIN/initdb" -D "$OUT/pg" -A trust -U wattdb > "$OUT/initdb.log"
$AS "$PGBIN/pg_ctl" -D "$OUT/pg" -l "$OUT/pg.log" -o "-p $PPORT -k $OUT -c jit=off -c max_connections=100" start > /dev/null
if [ "$FORWARDER" = 1 ] && [ "$POSTGRES" = 1 ]; then
  "$BUILD/bin/wattdb-hop-proxy" --port $FPORT --to-unix "$OUT/.s.PGSQL.$PPORT" > "$OUT/forwarder.log" 2>&1 &
  FWD=$!
fi
for i in $(seq 100); do psql -h 127.0.0.1 -p $WPORT -U wattdb -Atc "select 1" wattdb > /dev/null 2>&1 && break; sleep 0.2; done
psql -h 127.0.0.1 -p $PPORT -U wattdb -qc "create database wattdb" postgres

echo "round,system,workload,tps,retried_or_errors,cpu_us_per_tx" > "$OUT/results.csv"
tps() { grep -oP 'tps = \K[0-9.]+(?= \(without)' "$1" | head -1; }

# A server's CPU time so far, in clock ticks: its process's user and system time, that of
# its children it has reaped (PostgreSQL's backends of finished sessions) and that of its
# live children (WattDB's node processes; PostgreSQL's background processes).
HZ=$(getconf CLK_TCK)
server_ticks() {  # port
  local pid
  if [ "$1" = "$WPORT" ]; then pid=$MASTER; else pid=$(head -1 "$OUT/pg/postmaster.pid"); fi
  local t; t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pid/stat")
  for c in $(pgrep -P "$pid" || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# The same once it has stopped growing: a PostgreSQL backend's time reaches its parent some
# hundred milliseconds after its client is gone (at most 5 s waited).
settled_ticks() {  # port
  local a b
  a=$(server_ticks "$1")
  for _ in $(seq 16); do
    sleep 0.3
    b=$(server_ticks "$1")
    [ $((b - a)) -le 1 ] && break
    a=$b
  done
  echo "$b"
}
per_tx() {  # ticks_before ticks_after transactions: server CPU microseconds per transaction
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.1f", (b - a) / hz * 1e6 / n; else print "" }'
}

# WattDB with several nodes: waits until the segment layout has not changed for 5 s (the
# master splits loaded segments past their size and spreads them), at most 5 minutes.
settle() {  # port
  [ "$1" = "$WPORT" ] && [ "$NODES" -gt 1 ] || return 0
  local last="" now since=$SECONDS start=$SECONDS
  while [ $((SECONDS - start)) -lt 300 ]; do
    now=$(psql -h 127.0.0.1 -p "$1" -U wattdb -Atc "SELECT segment_id, node_id, role, state FROM wattdb_replicas ORDER BY 1, 2" wattdb)
    if [ "$now" != "$last" ]; then last=$now since=$SECONDS; elif [ $((SECONDS - since)) -ge 5 ]; then break; fi
    sleep 1
  done
  echo "   settled: $(echo "$last" | wc -l) copies of $(echo "$last" | cut -d'|' -f1 | sort -u | wc -l) segments on $(echo "$last" | cut -d'|' -f2 | sort -u | wc -l) nodes"
}

sysbench_cmd() {  # port
  echo "sysbench oltp_read_write --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$1 --pgsql-user=wattdb
        --pgsql-db=wattdb --tables=1 --table-size=$((SCALE * 25000))"
}

load() {  # name port: pgbench's tables and sysbench's, once per server
  local name=$1 port=$2
  echo "== $name: pgbench -i -s $SCALE; sysbench prepare"
  "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U wattdb -i -s "$SCALE" -q wattdb > "$OUT/$name.init" 2>&1
  $(sysbench_cmd "$port") cleanup > /dev/null 2>&1 || true
  $(sysbench_cmd "$port") prepare > "$OUT/$name.sb_prepare" 2>&1
  settle "$port"
}

run_all() {  # round name port pgoptions
  local r=$1 name=$2 port=$3 opts=$4 o="$OUT/$2.r$1"
  echo "== round $r: $name"
  local c0 c1 n
  c0=$(server_ticks "$port")
  PGOPTIONS="$opts" "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U wattdb -n -c "$CLIENTS" -j 2 -T "$TIME" \
    -M prepared --max-tries=1000 wattdb > "$o.tpcb" 2>&1
  c1=$(settled_ticks "$port")
  n=$(grep -oP 'number of transactions actually processed: \K[0-9]+' "$o.tpcb" || echo 0)
  local retried; retried=$(grep -oP 'number of transactions retried: \K[0-9]+' "$o.tpcb" || echo 0)
  echo "$r,$name,tpcb-like,$(tps "$o.tpcb"),$retried,$(per_tx "$c0" "$c1" "$n")" >> "$OUT/results.csv"
  c0=$(server_ticks "$port")
  PGOPTIONS="$opts" "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U wattdb -n -S -c "$CLIENTS" -j 2 -T "$TIME" \
    -M prepared wattdb > "$o.select" 2>&1
  c1=$(settled_ticks "$port")
  n=$(grep -oP 'number of transactions actually processed: \K[0-9]+' "$o.select" || echo 0)
  echo "$r,$name,select-only,$(tps "$o.select"),0,$(per_tx "$c0" "$c1" "$n")" >> "$OUT/results.csv"
  c0=$(server_ticks "$port")
  PGOPTIONS="$opts" $(sysbench_cmd "$port") --threads="$CLIENTS" --time="$TIME" run > "$o.sysbench" 2>&1
  c1=$(settled_ticks "$port")
  local t e
  t=$(grep -oP 'transactions:\s+[0-9]+\s+\(\K[0-9.]+' "$o.sysbench")
  e=$(grep -oP 'ignored errors:\s+\K[0-9]+' "$o.sysbench" || echo 0)
  n=$(grep -oP 'transactions:\s+\K[0-9]+' "$o.sysbench" || echo 0)
  echo "$r,$name,oltp_read_write,$t,$e,$(per_tx "$c0" "$c1" "$n")" >> "$OUT/results.csv"
}

load wattdb $WPORT
[ "$POSTGRES" = 1 ] && load pg15 $PPORT
for r in $(seq 1 "$ROUNDS"); do
  run_all "$r" wattdb $WPORT "$WOPTS"
  if [ "$POSTGRES" = 1 ]; then
    run_all "$r" pg15-read-committed $PPORT ""
    run_all "$r" pg15-repeatable-read $PPORT "-c default_transaction_isolation=repeatable\ read"
    [ -z "$FWD" ] || run_all "$r" pg15-via-forwarder $FPORT ""
  fi
done

echo
echo "scale=$SCALE clients=$CLIENTS time=${TIME}s, WattDB nodes=$NODES$([ "$HOSTED" = 1 ] && echo ' (node 1 in the master)'), machine: $(nproc) cores, autogroups $([ -n "$AUTOGROUP" ] && echo "off for the run" || echo "as the machine has them")"
/usr/bin/python3 - "$OUT/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
runs = {}  # (system, workload) -> {round: tps}
cpu = {}   # (system, workload) -> {round: server CPU microseconds per transaction}
for r in rows:
    runs.setdefault((r["system"], r["workload"]), {})[r["round"]] = float(r["tps"] or 0)
    if r["cpu_us_per_tx"]:
        cpu.setdefault((r["system"], r["workload"]), {})[r["round"]] = float(r["cpu_us_per_tx"])
def med(system, w):
    v = runs.get((system, w), {})
    return statistics.median(v.values()) if v else 0
def ratios(w, other):  # per-round WattDB / other
    a, b = runs.get(("wattdb", w), {}), runs.get((other, w), {})
    return sorted(a[k] / b[k] for k in a if b.get(k))
def cell(v, width, digits):  # "-" where PostgreSQL was skipped (--no-postgres)
    return f"{v:>{width}.{digits}f}" if v else f'{"-":>{width}}'
fwd = any(r["system"] == "pg15-via-forwarder" for r in rows)
n = len({r["round"] for r in rows})
print(f"medians of {n} round(s); 'range' is the lowest and highest per-round ratio to RC")
print(f'{"workload":<18}{"wattdb":>10}{"pg15 RC":>10}{"pg15 RR":>10}{"vs RC":>8}{"range":>13}{"vs RR":>8}'
      + (f'{"pg15 fwd":>10}{"fwd/RC":>8}' if fwd else ''))
for w in ("tpcb-like", "select-only", "oltp_read_write"):
    a, rc, rr, f = med("wattdb", w), med("pg15-read-committed", w), med("pg15-repeatable-read", w), med("pg15-via-forwarder", w)
    rs = ratios(w, "pg15-read-committed")
    span = f"{rs[0]:.2f}-{rs[-1]:.2f}" if len(rs) > 1 else ""
    print(f'{w:<18}{a:>10.1f}{cell(rc, 10, 1)}{cell(rr, 10, 1)}'
          f'{cell(a / rc if rc else 0, 8, 2)}{span:>13}{cell(a / rr if rr else 0, 8, 2)}'
          + (f'{cell(f, 10, 1)}{cell(f / rc if rc else 0, 8, 2)}' if fwd else ''))
# Server CPU a transaction costs (all of each server's processes; the clients' CPU not
# counted): steadier than throughput on a shared machine, and what throughput is bound by
# once the cores are busy.
print(f'\nserver CPU per transaction (us, medians){"":<3}{"wattdb":>10}{"pg15 RC":>10}{"ratio":>8}{"range":>13}')
for w in ("tpcb-like", "select-only", "oltp_read_write"):
    a, b = cpu.get(("wattdb", w), {}), cpu.get(("pg15-read-committed", w), {})
    if not a:
        continue
    ma = statistics.median(a.values())
    mb = statistics.median(b.values()) if b else 0
    rs = sorted(a[k] / b[k] for k in a if b.get(k))
    span = f"{rs[0]:.2f}-{rs[-1]:.2f}" if len(rs) > 1 else ""
    print(f'{w:<42}{ma:>10.1f}{cell(mb, 10, 1)}{cell(ma / mb if mb else 0, 8, 2)}{span:>13}')
PY
echo "raw outputs and results.csv in $OUT"
