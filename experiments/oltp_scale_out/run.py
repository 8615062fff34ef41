#!/usr/bin/python3
"""Scale-out of short transactions: pgbench select-only and TPC-B-like on clusters of 1, 2 and
3 nodes, each node on an emulated host with a CPU cap of its own (the master and pgbench outside
the caps), so that adding a node adds CPU as adding a machine would.

Each cluster is loaded with `pgbench -i -s SCALE`; the accounts table splits into segments of
--segment-mb and the master spreads them over the nodes; the experiment waits until that has
settled. Then each workload runs --runs times, alternating, --seconds each after a warm-up;
the median counts. A run's transactions must not fail, and the balances must add up after
every cluster's runs (sum of account, teller and branch balances and of the history's deltas
agree). Without root the nodes are local processes sharing the machine (no caps: adding nodes
then adds no CPU and the figure shows only the cost of spreading the transactions).
Writes results.csv, oltp_scale_out.png and result.md into --out.

usage: experiments/oltp_scale_out/run.py [--quick] [--scale N] [--clients N] [--seconds S]
                                         [--runs N] [--nodes 1,2,3] [--cpus C] [--segment-mb M]
                                         [--out DIR] [--build DIR] [--hosts emulated|loopback]
--quick: scale 1, 1 and 3 nodes, 1 run of 3 s per workload; checks only that nothing fails and
the balances add up.
"""
import csv
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks", "analytics"))
from wattdb_lab import Cluster, log  # noqa: E402
import cli  # noqa: E402
import run as analytics  # noqa: E402

WORKLOADS = [("select-only", ["-S"]), ("tpcb-like", ["-b", "tpcb-like"])]


def pgbench(cl, extra, clients, seconds, timeout):
    """Runs pgbench against the cluster; returns (tps, failed transactions)."""
    cmd = ["pgbench", "-h", "127.0.0.1", "-p", str(cl.port), "-U", "wattdb", "-n", "-M", "prepared",
           "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds)] + extra + ["wattdb"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"pgbench {' '.join(extra)} failed: {r.stderr.strip()[-400:]}")
    tps = re.search(r"tps = ([0-9.]+) \((?:without|excluding)", r.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", r.stdout)
    if not tps:
        raise RuntimeError(f"no tps in pgbench output: {r.stdout[-400:]}")
    return float(tps.group(1)), int(failed.group(1)) if failed else 0


def balances_agree(cl):
    """The TPC-B invariant: every table's balances sum to the history's deltas."""
    sums = cl.sql("SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers),"
                  " (SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history)")
    vals = [int(v or 0) for v in sums[0]]
    return len(set(vals)) == 1, vals


def run_size(args, n):
    """Loads pgbench's tables into an n-node cluster and runs the workloads; returns
    ({workload: [tps]}, failed transactions, segments per node, the kind of hosts)."""
    segment_bytes = args.segment_mb << 20
    cl = Cluster(build=args.build, nodes=n, hosts=args.hosts, cpus=args.cpus, segment_bytes=segment_bytes,
                 telemetry_ms=1000)
    try:
        cl.start()
        log(f"{n} node(s) ({cl.hosts}): pgbench -i -s {args.scale}")
        r = subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(cl.port), "-U", "wattdb", "-i", "-q",
                            "-s", str(args.scale), "wattdb"], capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise RuntimeError(f"pgbench -i: {r.stderr.strip()[-400:]}")
        cl.sql("VACUUM")
        analytics.settle(cl.port, segment_bytes)
        spread = cl.segments_per_node()
        log(f"segments per node: {spread}")
        for name, extra in WORKLOADS:  # warm-up: caches, connections, prepared plans
            pgbench(cl, extra, args.clients, 3, 300)
        tps, failed = {}, 0
        for i in range(args.runs):
            for name, extra in WORKLOADS:
                t, f = pgbench(cl, extra, args.clients, args.seconds, args.seconds + 300)
                tps.setdefault(name, []).append(t)
                failed += f
                log(f"  run {i + 1}: {name:<12} {t:10,.1f} tps ({f} failed)")
        ok, vals = balances_agree(cl)
        if not ok:
            raise RuntimeError(f"{n} node(s): balances do not add up: {vals}")
        return tps, failed, spread, cl.hosts
    finally:
        cl.stop()


def main():
    ap = cli.parser(__doc__, HERE)
    ap.add_argument("--scale", type=int, default=0, help="pgbench scale (default 4)")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=0, help="seconds per run (default 15)")
    ap.add_argument("--runs", type=int, default=0, help="runs per workload (default 3)")
    ap.add_argument("--nodes", default="", help="cluster sizes (default 1,2,3; --quick 1,3)")
    ap.add_argument("--cpus", type=float, default=0.25, help="CPU cap of each node's host (default 0.25)")
    ap.add_argument("--segment-mb", type=int, default=8, help="segment size in MiB (default 8)")
    args = ap.parse_args()
    args.scale = args.scale or (1 if args.quick else 4)
    args.seconds = args.seconds or (3 if args.quick else 15)
    args.runs = args.runs or (1 if args.quick else 3)
    if args.quick:
        args.segment_mb = min(args.segment_mb, 2)
    sizes = [int(x) for x in (args.nodes or ("1,3" if args.quick else "1,2,3")).split(",") if x]
    os.makedirs(args.out, exist_ok=True)
    results, failed, spreads, hosts = {}, {}, {}, None
    for n in sizes:
        results[n], failed[n], spreads[n], hosts = run_size(args, n)

    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["nodes", "workload", "run", "tps"])
        for n in sizes:
            for name, _ in WORKLOADS:
                for i, t in enumerate(results[n][name]):
                    w.writerow([n, name, i, f"{t:.1f}"])
    med = {(n, q): statistics.median(results[n][q]) for n in sizes for q, _ in WORKLOADS}
    base = sizes[0]
    where = (f"each node on an emulated host capped at {args.cpus:g} CPU, the master and pgbench outside the caps"
             if hosts == "emulated" else "local processes sharing the machine (no caps)")
    lines = [f"# OLTP scale-out: pgbench scale {args.scale}, {args.clients} clients ({where})", "",
             f"Median of {args.runs} runs of {args.seconds} s (`-M prepared`), transactions per second; in brackets "
             f"the ratio to {base} node{'s' if base > 1 else ''}.", "",
             "| workload | " + " | ".join(f"{n} node{'s' if n > 1 else ''}" for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for q, _ in WORKLOADS:
        cells = [f"{med[(n, q)]:,.1f} ({med[(n, q)] / med[(base, q)]:.2f}×)" for n in sizes]
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    lines += ["", "Segments per node: " + "; ".join(f"{n} node(s): {spreads[n]}" for n in sizes) + ".",
              "Failed transactions: " + ", ".join(f"{n} node(s): {failed[n]}" for n in sizes)
              + "; balances add up on every cluster."]
    with open(os.path.join(args.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for q, _ in WORKLOADS:
            ax.plot(sizes, [med[(n, q)] for n in sizes], marker="o", label=q)
        ax.set_xticks(sizes)
        ax.set_xlabel("nodes")
        ax.set_ylabel("transactions per second (median)")
        ax.set_yscale("log")
        ax.set_title(f"pgbench scale {args.scale}, {args.clients} clients, as nodes are added")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "oltp_scale_out.png"), dpi=120)
    except ImportError:
        log("matplotlib missing: no plot")


if __name__ == "__main__":
    main()
