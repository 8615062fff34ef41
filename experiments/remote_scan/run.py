#!/usr/bin/python3
"""Remote scans (the WattDB paper's Fig. 2): how fast the rows of a table can be read where
they are stored, and how fast they can be read by another process through the exchange, with
and without the exchange's prefetch buffer.

One node holds the table in several segments; the master is the reader. As in the paper, the
node has CPU of its own: as root it runs on an emulated host capped at --cpus cores (the master
outside the cap); without root it is a local process sharing the machine with the master (then
"remote" also pays for the master's work out of the node's CPU). With --cap cores (the default
for a whole number of CPUs, fewer than the machine has) the node's threads are also confined
to that many cores of their own and the master's to the others, as on two machines: the cap
alone is a quota per 100 ms, and a query of a few milliseconds can run on every core for all
of it (the node then borrows the master's idle core when it aggregates alone). Three ways to answer
SELECT count(*), sum(v), max(length(pad)) FROM t:
  local            the node scans its own segments and aggregates (wattdb_pushdown = on):
                   one row per segment crosses to the master.
  remote+prefetch  the node only scans (wattdb_pushdown = scan): every row's columns cross to
                   the master as column batches; up to four segments stream at once, each
                   aggregated apart by one of the master's threads, which merges their states
                   (a Gather; wattdb_exchange_prefetch = on, the default).
  remote           the same, one segment at a time, read and aggregated by the master's
                   statement thread straight off the connection (wattdb_exchange_prefetch = off).
Each way runs --runs times, interleaved; the median time gives rows per second.
Writes results.csv, scan.png and result.md into --out.

usage: experiments/remote_scan/run.py [--quick] [--rows N] [--runs N] [--out DIR] [--build DIR]
                                     [--hosts emulated|loopback] [--cpus N] [--cap cores|quota]
                                     [--pad repeated|distinct] [--frame-kb N]
--quick: 200,000 rows, 3 runs; checks that the three ways give the same answer.
--pad: every row's pad is the same text (default), or each row's differs (nothing repeats for
the exchange's dictionary encoding to save).
"""
import csv
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from wattdb_lab import Cluster, log, pin_threads  # noqa: E402
import cli  # noqa: E402

QUERY = "SELECT count(*), sum(v), max(length(pad)) FROM t"
MODES = [
    ("local", ["SET wattdb_pushdown = on", "SET wattdb_exchange_prefetch = on"]),
    ("remote+prefetch", ["SET wattdb_pushdown = scan", "SET wattdb_exchange_prefetch = on"]),
    ("remote", ["SET wattdb_pushdown = scan", "SET wattdb_exchange_prefetch = off"]),
]


def timed(cl, settings):
    """Runs QUERY after `settings` in one session; returns (seconds, answer)."""
    script = "".join(f"{x};\n" for x in settings) + "\\timing on\n" + QUERY + ";\n"
    r = subprocess.run(cl.psql_args(), input=script, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    answer, ms = None, None
    for line in r.stdout.splitlines():
        if line.startswith("Time: "):
            ms = float(line.split()[1])
        elif "|" in line:
            answer = line
    return ms / 1000.0, answer


def main():
    ap = cli.parser(__doc__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--rows", type=int, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--cpus", type=float, default=1.0)
    ap.add_argument("--cap", choices=["cores", "quota"], default=None,
                    help="an emulated node's CPU limit: cores of its own (default for a whole number of "
                         "CPUs fewer than the machine's) or only its quota")
    ap.add_argument("--frame-kb", type=int, default=None,
                    help="the cluster's scan_frame_kb (default: its own, 64; 0: a frame per batch)")
    ap.add_argument("--pad", choices=["repeated", "distinct"], default="repeated",
                    help="every row's 100-byte pad the same text, or each a different one")
    args = ap.parse_args()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    runs = args.runs or (3 if args.quick else 7)
    os.makedirs(args.out, exist_ok=True)
    frame = "" if args.frame_kb is None else f"scan_frame_kb = {args.frame_kb}"
    cl = Cluster(build=args.build, nodes=1, hosts=args.hosts, cpus=args.cpus, segment_bytes=16 << 20, cluster_toml=frame,
                 telemetry_ms=1000)
    ncpu = os.cpu_count() or 1
    whole = args.cpus == int(args.cpus) and 1 <= args.cpus < ncpu
    cap = args.cap or ("cores" if whole else "quota")
    if cap == "cores" and not whole:
        sys.exit(f"--cap cores needs a whole number of CPUs below this machine's {ncpu}")
    try:
        cl.start()
        if cl.hosts == "emulated" and cap == "cores":
            node_cores = set(range(ncpu - int(args.cpus), ncpu))
            pid = cl.node_pid(1)
            if pid is None:
                raise RuntimeError("node 1's process not found")
            pin_threads(pid, node_cores)
            pin_threads(cl.master.pid, set(range(ncpu)) - node_cores)
            log(f"node on CPU {sorted(node_cores)}, master on the others")
        else:
            cap = "quota"
        log(f"loading {rows:,} rows")
        cl.sql("CREATE TABLE t (k INT PRIMARY KEY, v INT, pad TEXT)")
        step = 100_000
        for lo in range(1, rows + 1, step):
            hi = min(rows, lo + step - 1)
            pad = "repeat('p', 100)" if args.pad == "repeated" else "lpad(g::text, 100, 'p')"
            cl.sql(f"INSERT INTO t SELECT g, g % 1000, {pad} FROM generate_series({lo}, {hi}) g")
        cl.sql("VACUUM t")
        segments = int(cl.scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 't'"))
        log(f"{segments} segments")
        results = []
        answers = {}
        # Warm up: every way once, then local until two runs agree (the segments' column
        # images are built in the background after the load; the first reads wait for them).
        for _, settings in MODES:
            timed(cl, settings)
        prev = timed(cl, MODES[0][1])[0]
        for _ in range(20):
            cur = timed(cl, MODES[0][1])[0]
            if cur < 1.5 * prev and prev < 1.5 * cur:
                break
            prev = cur
        for run in range(runs):
            for name, settings in MODES:
                secs, answer = timed(cl, settings)
                answers.setdefault(name, answer)
                if answer != answers[name]:
                    raise RuntimeError(f"{name}: answer changed: {answer} vs {answers[name]}")
                results.append((name, run, secs, rows / secs))
                log(f"{name:16s} run {run}: {secs:.3f} s, {rows / secs / 1e6:.2f} M rows/s")
        if len(set(answers.values())) != 1:
            raise RuntimeError(f"the three ways disagree: {answers}")
    finally:
        cl.stop()

    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "run", "seconds", "rows_per_s"])
        for r in results:
            w.writerow([r[0], r[1], f"{r[2]:.4f}", f"{r[3]:.0f}"])
    med = {name: statistics.median(r[3] for r in results if r[0] == name) for name, _ in MODES}
    lo = {name: min(r[3] for r in results if r[0] == name) for name, _ in MODES}
    hi = {name: max(r[3] for r in results if r[0] == name) for name, _ in MODES}
    local = med["local"]
    where = ((f"an emulated host with {args.cpus:g} CPU of its own" if cap == "cores"
              else f"an emulated host capped at {args.cpus:g} CPU a 100 ms period") if cl.hosts == "emulated"
             else "a local process sharing the machine with the master")
    lines = [f"# Remote scan: {rows:,} rows in {segments} segments on one node ({where}), {runs} runs each (median)",
             "",
             "| way | rows/s (median) | min | max | of local |", "|---|---|---|---|---|"]
    for name, _ in MODES:
        lines.append(f"| {name} | {med[name]:,.0f} | {lo[name]:,.0f} | {hi[name]:,.0f} | {med[name] / local:.2f} |")
    lines += ["", f"Query: `{QUERY}`; the three ways gave the same answer ({answers['local']}).",
              "Target: remote with prefetch at least 0.90 of local (the paper measured 0.75)."]
    with open(os.path.join(args.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        names = [n for n, _ in MODES]
        fig, ax = plt.subplots(figsize=(6, 4))
        vals = [med[n] / 1e6 for n in names]
        err = [[(med[n] - lo[n]) / 1e6 for n in names], [(hi[n] - med[n]) / 1e6 for n in names]]
        ax.bar(names, vals, yerr=err, capsize=6, color=["#4c72b0", "#55a868", "#c44e52"])
        for i, n in enumerate(names):
            ax.text(i, vals[i] / 2, f"{med[n] / local:.0%}\nof local", ha="center", va="center", color="white")
        ax.set_ylabel("million rows per second")
        ax.set_title(f"Scan of {rows:,} rows: local vs through the exchange")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "scan.png"), dpi=120)
    except ImportError:
        log("matplotlib missing: no plot")


if __name__ == "__main__":
    main()
