#!/bin/bash
# Two builds of the master side by side on pgbench's TPC-B-like script (or another built-in
# script, or a script file, with --builtin / --script): each runs a cluster
# with its node hosted in the master process (power = "master"), both loaded once, then the
# rounds alternate between them (the order swapped every round) so that the machine's drift
# hits both alike. Per round: tps, server CPU per transaction (utime + stime of the master
# process, which runs the node too) and the ratios B / A.
# With --allocs (root, perf): also heap allocations per transaction of each build, counted by
# a uprobe on tcmalloc's operator new over ALLOC_TX transactions.
#
# Usage: benchmarks/tpcb_ab.sh [--rounds N] [--time SEC] [--scale N] [--clients N] [--allocs]
#                              [--builtin NAME | --script FILE] A_BIN_DIR B_BIN_DIR
#   A_BIN_DIR, B_BIN_DIR: directories holding a wattdb-master (e.g. build/bin of two trees)
set -euo pipefail
ROUNDS=6 TIME=15 SCALE=4 CLIENTS=4 ALLOCS=0 ALLOC_TX=3000 BUILTIN=tpcb-like SCRIPT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --allocs) ALLOCS=1; shift ;;
    --builtin) BUILTIN=$2; shift 2 ;;
    --script) SCRIPT=$(readlink -f "$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: $0 [options] A_BIN_DIR B_BIN_DIR (--help)" >&2; exit 2; }
BINS=("$1" "$2")
WORKLOAD=(-b "$BUILTIN")
[ -z "$SCRIPT" ] || WORKLOAD=(-f "$SCRIPT" -D scale="$SCALE")
for b in "${BINS[@]}"; do
  [ -x "$b/wattdb-master" ] || { echo "no wattdb-master in $b" >&2; exit 2; }
done
PGBIN=/usr/lib/postgresql/15/bin
OUT=$(mktemp -d /tmp/wattdb_tpcb_ab.XXXXXX)
# Ports below the kernel's ephemeral range (32768-60999 by default), where outgoing
# connections never take them.
BASE=$((20000 + RANDOM % 4000))
PORTS=($BASE $((BASE + 10)))
PIDS=()
AUTOGROUP=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$AUTOGROUP" ] || echo "$AUTOGROUP" > /proc/sys/kernel/sched_autogroup_enabled || true
}
trap cleanup EXIT
# As in oltp_vs_postgres.sh: without autogroups every thread weighs the same.
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/kernel/sched_autogroup_enabled ]; then
  AUTOGROUP=$(cat /proc/sys/kernel/sched_autogroup_enabled)
  echo 0 > /proc/sys/kernel/sched_autogroup_enabled
fi
export PGSSLMODE=disable

start() {  # index
  local k=$1 port=${PORTS[$1]} dir=$OUT/c$1
  mkdir -p "$dir"
  printf '[cluster]\ndata_dir = "%s/data"\n[master]\npg_port = %d\ncluster_port = %d\n[[node]]\nid = 1\nport = %d\npower = "master"\n' \
    "$dir" "$port" $((port + 1)) $((port + 2)) > "$dir/wattdb.toml"
  "${BINS[$k]}/wattdb-master" --config "$dir/wattdb.toml" --manage-nodes --log-level warn > "$dir/log" 2>&1 &
  PIDS[$k]=$!
  for _ in $(seq 150); do
    psql -h 127.0.0.1 -p "$port" -U wattdb -Atc "select 1" wattdb > /dev/null 2>&1 && break
    sleep 0.2
  done
  echo "== ${BINS[$k]}: pgbench -i -s $SCALE"
  "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U wattdb -i -s "$SCALE" -q wattdb > "$dir/init" 2>&1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pgbench_run() {  # index, then pgbench's own options
  local k=$1; shift
  "$PGBIN/pgbench" -h 127.0.0.1 -p "${PORTS[$k]}" -U wattdb -n -c "$CLIENTS" -j 2 -M prepared "$@" wattdb
}

start 0
start 1
HZ=$(getconf CLK_TCK)
echo "round,build,tps,cpu_us_per_tx" > "$OUT/results.csv"
for r in $(seq 1 "$ROUNDS"); do
  order="0 1"; [ $((r % 2)) -eq 0 ] && order="1 0"
  for k in $order; do
    c0=$(cpu_ticks "${PIDS[$k]}")
    pgbench_run "$k" "${WORKLOAD[@]}" -T "$TIME" --max-tries=1000 > "$OUT/r$r.$k" 2>&1
    c1=$(cpu_ticks "${PIDS[$k]}")
    tx=$(grep -oP 'number of transactions actually processed: \K[0-9]+' "$OUT/r$r.$k")
    tps=$(grep -oP 'tps = \K[0-9.]+(?= \(without)' "$OUT/r$r.$k")
    echo "$r,$k,$tps,$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" -v n="$tx" 'BEGIN{printf "%.1f", (b - a) / hz * 1e6 / n}')" \
      >> "$OUT/results.csv"
  done
  echo "   round $r done"
done

if [ "$ALLOCS" = 1 ]; then
  LIB=$(ldd "${BINS[0]}/wattdb-master" | grep -oP '/\S*libtcmalloc_minimal\S*' | head -1)
  LIB=$(readlink -f "$LIB")
  # operator new(size_t) in the library, from its dynamic symbol table.
  OFF=$(nm -D --defined-only "$LIB" | awk '$3 == "_Znwm" {print "0x" $1}')
  perf probe -q -d 'probe_libtcmalloc_minimal:wattdb_new' > /dev/null 2>&1 || true
  perf probe -q -x "$LIB" -a "wattdb_new=$OFF" > /dev/null
  for k in 0 1; do
    pgbench_run "$k" "${WORKLOAD[@]}" -t 300 > /dev/null 2>&1  # warm: plans cached, tables kept
    perf stat -x, -e probe_libtcmalloc_minimal:wattdb_new -p "${PIDS[$k]}" -o "$OUT/allocs.$k" -- \
      "$PGBIN/pgbench" -h 127.0.0.1 -p "${PORTS[$k]}" -U wattdb -n -c "$CLIENTS" -j 2 -M prepared "${WORKLOAD[@]}" -t "$ALLOC_TX" wattdb \
      > /dev/null 2>&1
    n=$(grep wattdb_new "$OUT/allocs.$k" | cut -d, -f1)
    echo "allocations per transaction, ${BINS[$k]}: $(awk -v n="$n" -v t=$((ALLOC_TX * CLIENTS)) 'BEGIN{printf "%.1f", n / t}')"
  done
  perf probe -q -d 'probe_libtcmalloc_minimal:wattdb_new' > /dev/null 2>&1 || true
fi

/usr/bin/python3 - "$OUT/results.csv" "${BINS[0]}" "${BINS[1]}" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["round"], {})[r["build"]] = (float(r["tps"]), float(r["cpu_us_per_tx"]))
print(f"A = {sys.argv[2]}\nB = {sys.argv[3]}")
print(f'{"round":>5}{"A tps":>10}{"B tps":>10}{"A us/tx":>9}{"B us/tx":>9}{"tps B/A":>9}{"cpu B/A":>9}')
tr, cr = [], []
for k in sorted(by, key=int):
    (at, ac), (bt, bc) = by[k]["0"], by[k]["1"]
    tr.append(bt / at); cr.append(bc / ac)
    print(f"{k:>5}{at:>10.0f}{bt:>10.0f}{ac:>9.1f}{bc:>9.1f}{bt / at:>9.3f}{bc / ac:>9.3f}")
print(f"median ratio: tps {statistics.median(tr):.3f} (B faster in {sum(x > 1 for x in tr)} of {len(tr)}), "
      f"server CPU per transaction {statistics.median(cr):.3f}")
PY
echo "raw outputs and results.csv in $OUT"
