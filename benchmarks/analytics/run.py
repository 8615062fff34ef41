"""Analytic queries on WattDB (1 and 3 nodes) next to PostgreSQL 15 on this machine.

Generates a TPC-H-like lineitem table (default 5,000,000 rows) and the orders it joins
(a quarter as many), loads the same CSV into each system with COPY, runs a fixed set of
queries several times on each, checks that every system gives the same answer, and prints
per-query times (best of the runs; the first run's in results.csv too) and the ratio PostgreSQL / WattDB (above 1: WattDB is
faster). Writes results.csv, the answers and the servers' logs under a fresh directory.
"""
import argparse
import csv
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PGBIN = "/usr/lib/postgresql/15/bin"

SCHEMA = [
    """CREATE TABLE orders (o_orderkey BIGINT PRIMARY KEY, o_custkey INT, o_orderstatus TEXT,
       o_totalprice NUMERIC(15,2), o_orderdate TIMESTAMP, o_orderpriority TEXT)""",
    """CREATE TABLE lineitem (l_orderkey BIGINT, l_linenumber INT, l_partkey INT, l_suppkey INT,
       l_quantity NUMERIC(15,2), l_extendedprice NUMERIC(15,2), l_discount NUMERIC(15,2),
       l_tax NUMERIC(15,2), l_returnflag TEXT, l_linestatus TEXT, l_shipdate TIMESTAMP,
       l_shipmode TEXT, PRIMARY KEY (l_orderkey, l_linenumber))""",
]

QUERIES = [
    ("full-scan aggregates",
     "SELECT count(*), sum(l_extendedprice), avg(l_quantity) FROM lineitem"),
    ("group by 2 flags, 4 aggregates",
     "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), avg(l_discount), count(*) "
     "FROM lineitem GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"),
    ("selective filter (0.5%) + aggregate",
     "SELECT count(*), sum(l_extendedprice * (1 - l_discount)) FROM lineitem WHERE l_suppkey <= 50"),
    ("group by 10,000 keys, top 10",
     "SELECT l_suppkey, sum(l_extendedprice) AS revenue FROM lineitem GROUP BY l_suppkey "
     "ORDER BY revenue DESC, l_suppkey LIMIT 10"),
    ("join with orders + group by",
     "SELECT o_orderpriority, count(*), sum(l_extendedprice) FROM lineitem JOIN orders ON l_orderkey = o_orderkey "
     "WHERE o_orderdate < '1994-01-01' GROUP BY o_orderpriority ORDER BY o_orderpriority"),
    ("order by ... limit 20",
     "SELECT l_orderkey, l_linenumber, l_extendedprice FROM lineitem "
     "ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 20"),
]


def fmt_ms(ms):
    return "failed" if ms is None else f"{ms:.1f}"


def generate(rows, out_dir):
    """Writes lineitem.csv and orders.csv (deterministic for a given row count)."""
    rng = random.Random(42)
    flags, statuses = "RAN", "OF"
    priorities = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
    modes = ["AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB", "REG AIR"]
    t0 = time.time()
    with open(f"{out_dir}/lineitem.csv", "w") as li, open(f"{out_dir}/orders.csv", "w") as od:
        n, order = 0, 0
        while n < rows:
            order += 1
            lines = min(rng.randint(1, 7), rows - n)
            day = rng.randrange(2400)  # 1992-01-01 + day
            y, rest = 1992 + day // 365, day % 365
            date = f"{y}-{1 + rest // 31:02d}-{1 + rest % 28:02d} 00:00:00"
            total = 0
            for ln in range(1, lines + 1):
                qty = rng.randint(1, 50)
                price = qty * rng.randint(900, 2000) + rng.randint(0, 99) / 100
                total += price
                disc = rng.randint(0, 10) / 100
                tax = rng.randint(0, 8) / 100
                li.write(f"{order},{ln},{rng.randint(1, 200000)},{rng.randint(1, 10000)},{qty}.00,{price:.2f},"
                         f"{disc:.2f},{tax:.2f},{flags[rng.randrange(3)]},{statuses[rng.randrange(2)]},{date},"
                         f"{modes[rng.randrange(7)]}\n")
            n += lines
            od.write(f"{order},{rng.randint(1, 150000)},{statuses[rng.randrange(2)]},{total:.2f},{date},"
                     f"{priorities[rng.randrange(5)]}\n")
    print(f"generated {rows:,} lineitem rows and {order:,} orders in {time.time() - t0:.1f} s", flush=True)
    return order


def psql(port, sql, db="wattdb", timing=False):
    """Runs one statement; returns (rows as text lines, milliseconds as psql measured them)."""
    args = ["psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(port), "-U", "wattdb", "-d", db,
            "-v", "ON_ERROR_STOP=1"]
    if timing:
        args += ["-c", "\\timing on"]
    p = subprocess.run(args + ["-c", sql], capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"port {port}: {sql[:80]}: {p.stderr.strip()}")
    lines = [l for l in p.stdout.splitlines() if l and not l.startswith("Timing is")]
    ms = None
    if timing:
        m = re.match(r"Time: ([0-9.]+) ms", lines[-1])
        ms = float(m.group(1))
        lines = lines[:-1]
    return lines, ms


def load(port, data, db="wattdb"):
    for stmt in SCHEMA:
        psql(port, stmt, db)
    t0 = time.time()
    for table in ("orders", "lineitem"):
        psql(port, f"\\copy {table} FROM '{data}/{table}.csv' WITH (FORMAT csv)", db)
    return time.time() - t0


def normalise(lines):
    """Answers compared across systems: numbers rounded to 6 significant digits."""
    def cell(c):
        try:
            return f"{float(c):.6g}"
        except ValueError:
            return c
    return ["|".join(cell(c) for c in l.split("|")) for l in lines]


class WattDB:
    def __init__(self, build, nodes, out, base_port, hosted=False):
        self.dir = f"{out}/wattdb{nodes}{'m' if hosted else ''}"
        os.makedirs(self.dir)
        self.port = base_port
        cfg = f"[cluster]\ndata_dir = \"{self.dir}/data\"\n[master]\npg_port = {base_port}\n" \
              f"cluster_port = {base_port + 1}\n"
        for i in range(1, nodes + 1):
            cfg += f"[[node]]\nid = {i}\nport = {base_port + 1 + i}\n"
            if hosted and i == 1:
                cfg += 'power = "master"\n'  # node 1 lives in the master process
        with open(f"{self.dir}/cluster.toml", "w") as f:
            f.write(cfg)
        with open(f"{self.dir}/policy.toml", "w") as f:
            f.write('mode = "manual"\n')
        self.log = open(f"{self.dir}/master.log", "w")
        self.proc = subprocess.Popen([f"{build}/bin/wattdb-master", "--config", f"{self.dir}/cluster.toml",
                                      "--policy", f"{self.dir}/policy.toml", "--manage-nodes", "--log-level", "warn"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_ready(self.port)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Postgres:
    def __init__(self, out, port):
        self.dir = f"{out}/pg"
        self.port = port
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        os.makedirs(self.dir)
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        subprocess.run(self.as_pg + [f"{PGBIN}/initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "wattdb"],
                       check=True, capture_output=True)
        subprocess.run(self.as_pg + [f"{PGBIN}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/pg.log", "-o",
                                     f"-p {port} -k {self.dir} -c jit=off -c shared_buffers=1GB -c work_mem=64MB",
                                     "start"], check=True, capture_output=True)
        wait_ready(port, db="postgres")
        psql(port, "CREATE DATABASE wattdb", db="postgres")

    def stop(self):
        subprocess.run(self.as_pg + [f"{PGBIN}/pg_ctl", "-D", f"{self.dir}/data", "stop", "-m", "fast"],
                       capture_output=True)


def settle(port, segment_bytes=32 << 20, quiet_s=5, limit_s=900):
    """Waits until the loaded tables' segments stop splitting and moving (after a load the
    master splits the segments past segment_bytes, one at a time, and spreads them), as
    PostgreSQL's VACUUM settles its table: the queries then time the cluster at rest."""
    t0 = time.time()
    last, since = None, time.time()
    while time.time() - t0 < limit_s:
        layout, _ = psql(port, "SELECT segment_id, node_id, bytes FROM wattdb_segments ORDER BY 1")
        ids = [row.rsplit("|", 1)[0] for row in layout]
        big = any(row.rsplit("|", 1)[1] and int(row.rsplit("|", 1)[1]) > segment_bytes for row in layout)
        if ids != last or big:
            last, since = ids, time.time()
        elif time.time() - since >= quiet_s:
            break
        time.sleep(1)
    print(f"   segments settled after {time.time() - t0:.0f} s ({len(last)} segments)", flush=True)


def wait_ready(port, db="wattdb", seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            psql(port, "SELECT 1", db)
            return
        except (RuntimeError, subprocess.TimeoutExpired):
            time.sleep(0.3)
    raise RuntimeError(f"no server on port {port} after {seconds} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000, help="lineitem rows (default 5,000,000)")
    ap.add_argument("--nodes", default="1,3",
                    help="WattDB cluster sizes to run (default 1,3); a size ending in m has node 1 in the "
                         "master process (1m: the master alone)")
    ap.add_argument("--runs", type=int, default=5,
                    help="runs of each query; the best counts (default 5: the nodes build their segments' "
                         "column images during the first runs)")
    ap.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    ap.add_argument("--build", default=f"{ROOT}/build")
    ap.add_argument("--out", help="result directory (default: a fresh one under /tmp)")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="wattdb_analytics.")
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)
    os.environ["PGSSLMODE"] = "disable"
    data = f"{out}/data"
    os.makedirs(data, exist_ok=True)
    generate(a.rows, data)
    os.chmod(data, 0o755)
    for f in os.listdir(data):
        os.chmod(f"{data}/{f}", 0o644)

    systems = [] if a.no_postgres else ["postgres"]
    systems += [f"wattdb-{n}" for n in a.nodes.split(",") if n]
    times, firsts, answers, loads = {}, {}, {}, {}
    for i, name in enumerate(systems):
        port = 47000 + 10 * i
        if name == "postgres":
            server = Postgres(out, port)
        else:
            size = name.split("-")[1]
            server = WattDB(a.build, int(size.rstrip("m")), out, port, hosted=size.endswith("m"))
        try:
            loads[name] = load(port, data)
            # The same maintenance after the load on both: statistics, and storage settled.
            psql(port, "VACUUM ANALYZE" if name == "postgres" else "VACUUM")
            if name != "postgres":
                psql(port, "ANALYZE")
                settle(port)
            print(f"== {name}: loaded in {loads[name]:.1f} s", flush=True)
            for qname, sql in QUERIES:
                best, first, lines = None, None, []
                try:
                    for _ in range(a.runs):
                        lines, ms = psql(port, sql, timing=True)
                        best = ms if best is None else min(best, ms)
                        first = ms if first is None else first
                except RuntimeError as e:  # recorded as a failure; the other queries still run
                    print(f"   {qname:<38}    FAILED: {str(e).splitlines()[-1][:120]}", flush=True)
                    best, lines = None, [f"error: {e}"]
                times[(name, qname)] = best
                firsts[(name, qname)] = first
                answers[(name, qname)] = normalise(lines)
                if best is not None:
                    print(f"   {qname:<38}{best:>10.1f} ms   (first run {first:.1f} ms)", flush=True)
        finally:
            server.stop()

    ok = all(t is not None for t in times.values())
    for qname, _ in QUERIES:
        ref = answers[(systems[0], qname)]
        for name in systems[1:]:
            if times[(name, qname)] is not None and answers[(name, qname)] != ref:
                ok = False
                print(f"ANSWERS DIFFER: {qname}: {systems[0]} {ref[:3]} vs {name} {answers[(name, qname)][:3]}")
    with open(f"{out}/results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["query"] + [f"{s}_ms" for s in systems] + [f"{s}_first_run_ms" for s in systems])
        w.writerow(["load (COPY)"] + [f"{loads[s] * 1000:.0f}" for s in systems] * 2)
        for qname, _ in QUERIES:
            w.writerow([qname] + [fmt_ms(times[(s, qname)]) for s in systems] +
                       [fmt_ms(firsts[(s, qname)]) for s in systems])

    print(f"\n{a.rows:,} lineitem rows, best of {a.runs}; machine: {os.cpu_count()} cores")
    head = f'{"query":<38}' + "".join(f"{s:>12}" for s in systems)
    if "postgres" in systems:
        head += "".join(f"{'PG/' + s[7:]:>9}" for s in systems[1:])
    print(head)
    rows = [("load (COPY)", {s: loads[s] * 1000 for s in systems})]
    rows += [(q, {s: times[(s, q)] for s in systems}) for q, _ in QUERIES]
    for q, t in rows:
        line = f"{q:<38}" + "".join(f"{fmt_ms(t[s]):>12}" for s in systems)
        if "postgres" in systems:
            line += "".join(f"{t['postgres'] / t[s]:>9.2f}" if t[s] and t["postgres"] else f"{'-':>9}"
                            for s in systems[1:])
        print(line)
    print(f"answers {'identical' if ok else 'DIFFER or queries FAILED'}; results in {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
