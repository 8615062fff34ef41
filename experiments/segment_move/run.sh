#!/bin/sh
# Moves one ~32 MiB segment between nodes through SQL (ALTER TABLE ... MOVE SEGMENT) on a real
# local cluster, and copies the same amount of data with cp + sync for comparison.
# Usage: experiments/segment_move/run.sh [build dir]   (from the repository root)
set -e
BUILD=${1:-build}
DIR=$(mktemp -d /tmp/wattdb_move_exp.XXXXXX)
PORT=55433
cat > $DIR/cluster.toml <<TOML
[cluster]
data_dir = "$DIR/data"
segment_bytes = 67108864   # 64 MiB: the 32 MiB segment must not split
[master]
pg_port = $PORT
cluster_port = 57100
[[node]]
id = 1
port = 57101
[[node]]
id = 2
port = 57102
TOML
$BUILD/bin/wattdb-master --config $DIR/cluster.toml --manage-nodes --no-balance --log-level warn > $DIR/master.log 2>&1 &
MASTER=$!
trap 'kill $MASTER 2>/dev/null; wait $MASTER 2>/dev/null; rm -rf $DIR' EXIT
P="psql -h 127.0.0.1 -p $PORT -U wattdb -X -q -v ON_ERROR_STOP=1"
for i in $(seq 50); do $P -c "select 1" >/dev/null 2>&1 && break; sleep 0.2; done
$P -c "CREATE TABLE blob (id INT PRIMARY KEY, payload TEXT)"
# 100,000 rows x 320 random hex-ish characters ~ 33 MiB that does not compress much.
/usr/bin/python3 - > $DIR/load.sql <<'PY'
import random
random.seed(7)
alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
for b in range(100):
    rows = ",".join("(%d,'%s')" % (i, "".join(random.choice(alphabet) for _ in range(320)))
                    for i in range(b * 1000, b * 1000 + 1000))
    print("INSERT INTO blob VALUES %s;" % rows)
PY
$P -f $DIR/load.sql
SEG=$($P -At -c "SELECT segment_id FROM wattdb_segments WHERE table_name = 'blob'")
echo "segment $SEG loaded; moving it back and forth 5 times"
NODE=$($P -At -c "SELECT node_id FROM wattdb_segments WHERE segment_id = $SEG")
for r in 1 2 3 4 5; do
  TO=$((3 - NODE))
  $P -c "ALTER TABLE blob MOVE SEGMENT $SEG TO NODE $TO" 2>&1 | sed 's/^NOTICE:  /  /'
  NODE=$TO
done
BYTES=$(du -sb $DIR/data/n$NODE/segments | cut -f1)
echo "plain copy of the owning node's segment store ($BYTES bytes) with cp + sync:"
for r in 1 2 3; do
  rm -rf $DIR/copy
  S=$(date +%s%N); cp -r $DIR/data/n$NODE/segments $DIR/copy && sync; E=$(date +%s%N)
  echo "  cp+sync $(( (E - S) / 1000000 )) ms"
done
$P -c "SELECT count(*), min(id), max(id) FROM blob"
