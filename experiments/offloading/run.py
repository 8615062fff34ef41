#!/usr/bin/python3
"""Operator offloading (the WattDB paper, Fig. 3 and 9): concurrent analytic clients on a cluster
whose data all lives on one node, with the blocking operators above the exchanges (the merge
of 200,000 groups' partial states, a DISTINCT over every row) run on the master
(wattdb_offload = off), on idle helper nodes (on), or where the planner puts them from the
nodes' telemetry (auto: on a helper when the master is busy and a node nearly idle).

Every host is alike, as in the paper's cluster of identical nodes: the nodes run on emulated
hosts capped at --cpus cores, and the master gets the same cap. Node 1 owns every segment (no
balancing); nodes 2 and 3 hold nothing and are the helpers. For each number of clients and each
setting, the clients run the query mix back to back for --seconds; throughput (queries/s) and
response times are recorded. Without root the hosts are local processes without caps.

Writes results.csv, offloading.png and result.md into --out.

usage: experiments/offloading/run.py [--quick] [--rows N] [--clients 1,2,4] [--seconds S]
                                     [--cpus C] [--out DIR] [--build DIR] [--hosts emulated|loopback]
--quick: 50,000 rows, 1 and 2 clients, 4 s each; fails if a setting gives another answer or
a query fails, or if offloading never reached a helper.
"""
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks", "analytics"))
from wattdb_lab import Cluster, free_port_pair, log  # noqa: E402
import cli  # noqa: E402
import run as analytics  # noqa: E402

# Queries whose blocking operator above the exchange carries real work: the merge of about
# 200,000 groups' partial states, and a DISTINCT over every row (the nodes send the column).
QUERIES = [
    ("group by 200,000 keys, top 10",
     "SELECT l_partkey, sum(l_quantity) AS q FROM lineitem GROUP BY l_partkey ORDER BY q DESC, l_partkey LIMIT 10"),
    ("count distinct over every row", "SELECT count(DISTINCT l_partkey), count(DISTINCT l_suppkey) FROM lineitem"),
]
SETTINGS = ["off", "on", "auto"]


def run_query(cl, setting, sql):
    """(milliseconds, answer lines) of one query under `setting`, timed around psql."""
    t0 = time.time()
    r = subprocess.run(cl.psql_args(), input=f"SET wattdb_offload = {setting};\n{sql};\n", capture_output=True,
                       text=True, timeout=600)
    ms = (time.time() - t0) * 1000
    if r.returncode != 0:
        raise RuntimeError(f"{setting}: {sql[:60]}: {r.stderr.strip()}")
    return ms, analytics.normalise([ln for ln in r.stdout.splitlines() if ln])


def metric(cl, name):
    """A counter from the master's /metrics."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{cl.metrics_port}/metrics", timeout=10) as f:
        for line in f.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def run_point(cl, setting, clients, seconds, answers, errors):
    """`clients` threads run the mix back to back for `seconds`; returns [(query, ms)]."""
    done, lock = [], threading.Lock()
    stop = time.time() + seconds

    def client(i):
        k = i  # clients start at different queries of the mix
        while time.time() < stop:
            name, sql = QUERIES[k % len(QUERIES)]
            k += 1
            try:
                ms, answer = run_query(cl, setting, sql)
            except Exception as e:  # noqa: BLE001 -- recorded, reported, fails the run
                with lock:
                    errors.append(str(e))
                return
            with lock:
                done.append((name, ms))
                if answers.setdefault(name, answer) != answer:
                    errors.append(f"{setting}: {name}: the answer differs")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


def main():
    ap = cli.parser(__doc__, HERE)
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--clients", default="")
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--cpus", type=float, default=0.5, help="CPU cap of every host, the master's too (0.5)")
    args = ap.parse_args()
    rows = args.rows or (50_000 if args.quick else 500_000)
    clients = [int(x) for x in (args.clients or ("1,2" if args.quick else "1,2,4,6")).split(",") if x]
    seconds = args.seconds or (4 if args.quick else 40)
    os.makedirs(args.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="wattdb_offloading_data_")
    os.chmod(data, 0o755)
    analytics.generate(rows, data)

    segment_bytes = (1 << 20) if args.quick else (8 << 20)
    cl = Cluster(build=args.build, nodes=3, hosts=args.hosts, cpus=args.cpus, segment_bytes=segment_bytes,
                 telemetry_ms=500, balance=False, master_cpus=args.cpus)
    cl.metrics_port = free_port_pair()
    with open(cl.config) as f:
        config = f.read()
    with open(cl.config, "w") as f:
        f.write(config.replace("[power]\n", f"[power]\nmetrics_port = {cl.metrics_port}\n", 1))
    results, answers, errors = [], {}, []
    helped, walls = {}, {}
    try:
        cl.start()
        log(f"{cl.hosts} hosts, {args.cpus:g} CPU each (master included): loading {rows:,} lineitem rows")
        for stmt in analytics.SCHEMA:
            cl.sql(stmt)
        for table in ("orders", "lineitem"):
            cl.sql(f"\\copy {table} FROM '{data}/{table}.csv' WITH (FORMAT csv)", timeout=3600)
        cl.sql("VACUUM")
        analytics.settle(cl.port, segment_bytes)
        for node in (2, 3):  # every segment to node 1 (no balancing brings any back), then wake the helpers
            cl.sql(f"ALTER NODE {node} DRAIN", timeout=1800)
        for node in (2, 3):
            cl.sql(f"ALTER NODE {node} POWER ON", timeout=600)
        spread = cl.sql("SELECT node_id, count(*) FROM wattdb_segments GROUP BY node_id ORDER BY node_id")
        log(f"segments per node: {spread}")
        for _, sql in QUERIES:  # warm-up: block cache, column images (a quiet second)
            run_query(cl, "off", sql)
        time.sleep(1.2)
        for _, sql in QUERIES:
            run_query(cl, "off", sql)
        for n in clients:
            for setting in SETTINGS:
                before = metric(cl, "wattdb_offloaded_total")
                t0 = time.time()
                done = run_point(cl, setting, n, seconds, answers, errors)
                wall = walls[(n, setting)] = time.time() - t0
                helped[(n, setting)] = metric(cl, "wattdb_offloaded_total") - before
                for name, ms in done:
                    results.append((n, setting, name, ms))
                qps = len(done) / wall
                mean = statistics.mean(ms for _, ms in done) if done else float("nan")
                log(f"  {n} client(s), offload {setting:<4}: {qps:6.2f} queries/s, mean {mean:8.1f} ms, "
                    f"{helped[(n, setting)]:.0f} offloaded")
                if errors:
                    break
            if errors:
                break
    finally:
        cl.stop()
        for f in os.listdir(data):
            os.remove(os.path.join(data, f))
        os.rmdir(data)

    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["clients", "offload", "query", "ms"])
        for n, setting, name, ms in results:
            w.writerow([n, setting, name, f"{ms:.1f}"])
    summary = {}
    for n in clients:
        for setting in SETTINGS:
            ms = [r[3] for r in results if r[0] == n and r[1] == setting]
            if ms:
                summary[(n, setting)] = (len(ms) / walls[(n, setting)], statistics.mean(ms), statistics.median(ms))
    where = (f"emulated hosts capped at {args.cpus:g} CPU each, the master too" if cl.hosts == "emulated"
             else "local processes sharing the machine (no caps)")
    lines = [f"# Operator offloading: {rows:,} lineitem rows on node 1, nodes 2 and 3 idle ({where})", "",
             f"Each point: the clients run the two queries ({', '.join(q for q, _ in QUERIES)}) back to back for "
             f"{seconds:g} s.", "",
             "| clients | offload | queries/s | mean response (ms) | median (ms) | offloaded |",
             "|---|---|---|---|---|---|"]
    for (n, setting), (qps, mean, med) in summary.items():
        lines.append(f"| {n} | {setting} | {qps:.2f} | {mean:,.0f} | {med:,.0f} | {helped.get((n, setting), 0):.0f} |")
    lines += ["", "Answers: " + ("identical under every setting." if not errors else "ERRORS: " + "; ".join(errors[:3]))]
    with open(os.path.join(args.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        for setting, style in zip(SETTINGS, ("o-", "s-", "^--")):
            xs = [n for n in clients if (n, setting) in summary]
            a1.plot(xs, [summary[(n, setting)][0] for n in xs], style, label=f"offload {setting}")
            a2.plot(xs, [summary[(n, setting)][1] for n in xs], style, label=f"offload {setting}")
        a1.set_xlabel("concurrent clients")
        a1.set_ylabel("throughput (queries/s)")
        a2.set_xlabel("concurrent clients")
        a2.set_ylabel("mean response time (ms)")
        for a in (a1, a2):
            a.set_xticks(clients)
            a.legend(fontsize=8)
            a.grid(alpha=0.3)
        fig.suptitle("Blocking operators on the master vs. offloaded to idle helper nodes")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "offloading.png"), dpi=120)
    except ImportError:
        log("matplotlib missing: no plot")
    if errors:
        log(f"FAIL: {errors[:3]}")
        sys.exit(1)
    if not any(helped.get((n, "on"), 0) > 0 for n in clients):
        log("FAIL: with wattdb_offload = on no query ran on a helper node")
        sys.exit(1)


if __name__ == "__main__":
    main()
