#!/bin/bash
# Soak: a local 3-node cluster under pgbench's TPC-B-like script and a bank-transfer
# workload at once (CLIENTS in all, half each) for SECONDS; prints every error class and the
# RSS of the master and of each node at the start and at the end.
#   usage: benchmarks/soak.sh [SECONDS=600] [CLIENTS=64]
set -u
SECS=${1:-600}
CLIENTS=${2:-64}
HALF=$((CLIENTS / 2))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/bin
DIR=$(mktemp -d /tmp/wattdb_soak.XXXXXX)
PORT=$((26000 + RANDOM % 2000))
cat > "$DIR/cluster.toml" <<TOML
[cluster]
data_dir = "$DIR/data"
[master]
pg_port = $PORT
cluster_port = $((PORT + 1))
max_connections = $((CLIENTS + 16))
[auth]
method = "trust"
[[node]]
id = 1
port = $((PORT + 2))
[[node]]
id = 2
port = $((PORT + 3))
[[node]]
id = 3
port = $((PORT + 4))
TOML
"$BIN/wattdb-master" --manage-nodes --config "$DIR/cluster.toml" > "$DIR/master.out" 2>&1 &
MASTER=$!
trap 'kill $MASTER 2>/dev/null; wait $MASTER 2>/dev/null' EXIT
for i in $(seq 100); do psql -h 127.0.0.1 -p $PORT -U wattdb -qAtc "select 1" wattdb >/dev/null 2>&1 && break; sleep 0.1; done
PGBENCH=/usr/lib/postgresql/15/bin/pgbench
$PGBENCH -h 127.0.0.1 -p $PORT -U wattdb -i -s 4 -q wattdb > "$DIR/init.log" 2>&1 || { cat "$DIR/init.log"; exit 1; }
psql -h 127.0.0.1 -p $PORT -U wattdb -qc "CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT)" \
  -c "INSERT INTO accounts SELECT g, 1000 FROM generate_series(0, 999) g" wattdb
rss() {
  echo "master $(awk '/VmRSS/{print $2}' /proc/$MASTER/status) kB"
  for n in 1 2 3; do echo "node$n $(awk '/VmRSS/{print $2}' /proc/$(cat "$DIR/data/n$n/node.pid")/status) kB"; done
}
echo "== RSS at start"; rss
/usr/bin/python3 - "$PORT" "$HALF" "$SECS" > "$DIR/bank.out" 2>&1 <<'PY' &
import sys, threading, time, random, collections
import psycopg2
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
errors = collections.Counter(); done = [0]; lock = threading.Lock()
def worker(seed):
    rng = random.Random(seed)
    c = psycopg2.connect(host="127.0.0.1", port=port, user="wattdb", dbname="wattdb")
    end = time.time() + secs
    while time.time() < end:
        a, b = rng.sample(range(1000), 2)
        try:
            with c.cursor() as cur:
                cur.execute("UPDATE accounts SET balance = balance - 1 WHERE id = %s", (a,))
                cur.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (b,))
            c.commit()
            with lock: done[0] += 1
        except psycopg2.Error as e:
            c.rollback()
            with lock: errors[e.pgcode or "connection"] += 1
ts = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
print("bank transfers", done[0], "errors", dict(errors))
PY
BANK=$!
$PGBENCH -h 127.0.0.1 -p $PORT -U wattdb -n -c $HALF -j 2 -T "$SECS" --max-tries=1000 -M prepared wattdb > "$DIR/pgbench.log" 2>&1
wait $BANK
echo "== RSS at end"; rss
echo "== pgbench"; grep -E "transactions actually processed|failed|retried|tps = " "$DIR/pgbench.log"
echo "== bank"; cat "$DIR/bank.out"
echo "== bank total: $(psql -h 127.0.0.1 -p $PORT -U wattdb -qAtc 'select sum(balance) from accounts' wattdb) (expected 1000000)"
echo "== master warnings/errors: $(grep -cE ' [WE] ' "$DIR/master.out")"
echo "logs in $DIR"
