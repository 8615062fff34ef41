#!/usr/bin/python3
"""Scale-out of analytic queries: the analytics benchmark's queries on clusters of 1, 2 and 3
nodes, each node on an emulated host with a CPU cap of its own (the master outside the caps),
so that adding a node adds CPU as adding a machine would.

The same TPC-H-like lineitem and orders data (benchmarks/analytics) is loaded with COPY into
each cluster; split-off segments spread over the nodes. Each query runs twice to warm the
nodes (block cache; column images, which need a segment unchanged for a second), then --runs
times; the median counts. Answers must agree across
cluster sizes. Without root the nodes are local processes sharing the machine (no caps: then
adding nodes adds no CPU and the figure shows only the overhead of spreading).
Writes results.csv, scale_out.png and result.md into --out.

usage: experiments/scale_out/run.py [--quick] [--rows N] [--runs N] [--nodes 1,2,3] [--cpus C]
                                    [--out DIR] [--build DIR] [--hosts emulated|loopback]
--quick: 100,000 rows, 2 runs; checks that every cluster size gives the same answers.
"""
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks", "analytics"))
from wattdb_lab import Cluster, log  # noqa: E402
import cli  # noqa: E402
import run as analytics  # noqa: E402


def timed(cl, sql):
    """(milliseconds, answer lines) of one run of `sql`, as psql measures it."""
    r = subprocess.run(cl.psql_args(), input="\\timing on\n" + sql + ";\n", capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"{sql[:60]}: {r.stderr.strip()}")
    ms, lines = None, []
    for line in r.stdout.splitlines():
        if line.startswith("Time: "):
            ms = float(line.split()[1])
        elif line and not line.startswith("Timing is"):
            lines.append(line)
    return ms, analytics.normalise(lines)


def run_size(args, n, data, rows):
    """Loads the data into an n-node cluster and times every query; returns ({query: [ms]},
    {query: answer}, segments per node, the kind of hosts)."""
    segment_bytes = (2 << 20) if args.quick else (8 << 20)
    cl = Cluster(build=args.build, nodes=n, hosts=args.hosts, cpus=args.cpus, segment_bytes=segment_bytes,
                 telemetry_ms=1000)
    try:
        cl.start()
        log(f"{n} node(s) ({cl.hosts}): loading {rows:,} lineitem rows")
        for stmt in analytics.SCHEMA:
            cl.sql(stmt)
        for table in ("orders", "lineitem"):
            cl.sql(f"\\copy {table} FROM '{data}/{table}.csv' WITH (FORMAT csv)", timeout=3600)
        cl.sql("VACUUM")
        cl.sql("ANALYZE")
        analytics.settle(cl.port, segment_bytes)  # splits and spreading after the load are done
        spread = cl.segments_per_node()
        log(f"segments per node: {spread}")
        times, answers = {}, {}
        for qname, sql in analytics.QUERIES:
            # Warm-up: the first run finds the segments, the second (after the column cache's
            # quiet period) builds their column images; the runs then time the steady state.
            timed(cl, sql)
            time.sleep(1.2)
            timed(cl, sql)
            for _ in range(args.runs):
                ms, answer = timed(cl, sql)
                times.setdefault(qname, []).append(ms)
                if answers.setdefault(qname, answer) != answer:
                    raise RuntimeError(f"{qname}: the answer changed between runs")
            log(f"  {qname:<38} median {statistics.median(times[qname]):8.1f} ms")
        return times, answers, spread, cl.hosts
    finally:
        cl.stop()


def main():
    ap = cli.parser(__doc__, HERE)
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--nodes", default="1,2,3")
    ap.add_argument("--cpus", type=float, default=0.5, help="CPU cap of each node's host (default 0.5)")
    args = ap.parse_args()
    rows = args.rows or (100_000 if args.quick else 5_000_000)
    args.runs = args.runs or (2 if args.quick else 5)
    sizes = [int(x) for x in args.nodes.split(",") if x]
    os.makedirs(args.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="wattdb_scale_out_data_")
    os.chmod(data, 0o755)
    analytics.generate(rows, data)
    results, answers, spreads, hosts = {}, {}, {}, None
    for n in sizes:
        results[n], answers[n], spreads[n], hosts = run_size(args, n, data, rows)
    for f in os.listdir(data):
        os.remove(os.path.join(data, f))
    os.rmdir(data)

    differ = [q for q, _ in analytics.QUERIES if len({tuple(answers[n][q]) for n in sizes}) != 1]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["nodes", "query", "run", "ms"])
        for n in sizes:
            for q, _ in analytics.QUERIES:
                for i, ms in enumerate(results[n][q]):
                    w.writerow([n, q, i, f"{ms:.1f}"])
    med = {(n, q): statistics.median(results[n][q]) for n in sizes for q, _ in analytics.QUERIES}
    base = sizes[0]
    where = (f"each node on an emulated host capped at {args.cpus:g} CPU, the master outside the caps"
             if hosts == "emulated"
             else "local processes sharing the machine (no caps)")
    lines = [f"# Scale-out: {rows:,} lineitem rows, {len(sizes)} cluster sizes ({where})", "",
             f"Median of {args.runs} runs after two warm-up runs, milliseconds; in brackets the speed-up over "
             f"{base} node{'s' if base > 1 else ''}.", "",
             "| query | " + " | ".join(f"{n} node{'s' if n > 1 else ''}" for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for q, _ in analytics.QUERIES:
        cells = [f"{med[(n, q)]:,.1f} ({med[(base, q)] / med[(n, q)]:.2f}×)" for n in sizes]
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    lines += ["", "Segments per node: " + "; ".join(f"{n} node(s): {spreads[n]}" for n in sizes) + ".",
              "Answers: " + ("identical for every cluster size." if not differ else f"DIFFER for {differ}.")]
    with open(os.path.join(args.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for q, _ in analytics.QUERIES:
            ax.plot(sizes, [med[(n, q)] for n in sizes], marker="o", label=q)
        ax.set_xticks(sizes)
        ax.set_xlabel("nodes")
        ax.set_ylabel("median response time (ms)")
        ax.set_yscale("log")
        ax.set_title(f"Analytic queries on {rows:,} rows as nodes are added")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "scale_out.png"), dpi=120)
    except ImportError:
        log("matplotlib missing: no plot")
    if differ:
        log(f"FAIL: answers differ between cluster sizes: {differ}")
        sys.exit(1)


if __name__ == "__main__":
    main()
