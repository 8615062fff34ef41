#!/usr/bin/python3
"""Load step on a 4-node Atom-class WattDB cluster under the dynamic energy policy.

Calibrates the peak throughput (all nodes on), lets the cluster shrink at 10% of it, steps the
offered load to 90%, and back to 10% (open loop: pgbench --rate). Samples every half second:
offered and achieved load, p99 latency, nodes on, watts. Reports, for every wake, the time
from the controller's decision to the first query served by the woken node (its segments'
read counters), and the response-time bump after the step. Writes timeline.csv,
timeline.png and result.md into --out.

usage: experiments/load_step/run.py [--quick] [--out DIR] [--build DIR] [--hosts emulated|loopback]
--quick: short phases (under 3 minutes); checks the shape: a node woke and served, no failed
query, every row still there.
"""
import csv
import datetime
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from wattdb_lab import RANGE_QUERY, Cluster, dynamic_policy, log  # noqa: E402
import cli  # noqa: E402


def smooth(v, k=3):
    """Centered moving average over k samples (the meters' readings and ours are not aligned)."""
    h = k // 2
    return [sum(v[max(0, i - h):i + h + 1]) / len(v[max(0, i - h):i + h + 1]) for i in range(len(v))]


def wall(ts):
    return datetime.datetime.strptime(ts[:26], "%Y-%m-%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp() if "." in ts else datetime.datetime.strptime(
        ts, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


class Sampler(threading.Thread):
    """Every half second: nodes on, cluster watts, and which nodes served reads."""

    def __init__(self, cl):
        super().__init__(daemon=True)
        self.cl, self.stop, self.samples = cl, False, []
        self.first_read = {}  # node -> first time one of its segments had reads, per ownership epoch
        self.reads = {}

    def run(self):
        last = None
        while not self.stop:
            t = time.time()
            try:
                j = self.cl.joules()
                nodes = self.cl.active_nodes()
                segs = self.cl.sql("SELECT node_id, sum(rows_read) FROM wattdb_segments GROUP BY node_id")
            except RuntimeError:
                time.sleep(0.5)
                continue
            total = sum(v[0] for v in j.values())
            if last:
                self.samples.append((t, nodes, (total - last[1]) / (t - last[0])))
            last = (t, total)
            for node, reads in segs:
                self.reads.setdefault(int(node), []).append((t, int(reads or 0)))
            time.sleep(max(0.0, 0.5 - (time.time() - t)))

    def first_served_after(self, node, t0):
        for t, reads in self.reads.get(node, []):
            if t >= t0 and reads > 0:
                return t
        return None


def main():
    ap = cli.parser(__doc__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"), raw_description=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    quick = a.quick
    rows_n = 60000 if quick else 120000
    low_s, high_s, back_s = (20, 30, 15) if quick else (90, 120, 90)
    calibrate, clients = (8 if quick else 30), 8
    # Ranges long enough that the nodes, not the master, bound the peak: the step must need
    # more nodes (with 1,000-row ranges one node served 90% of the 4-node peak).
    script = RANGE_QUERY.format(hi=rows_n - 5000, span=4999)
    resume_ms = 1000
    # The nodes read rows from RocksDB (no column images), as the paper's read pages: with
    # images one node answers such ranges so cheaply that it served 90% of the 4-node peak
    # (which the master then bounds) and the step needed no node.
    cl = Cluster(build=a.build, nodes=4, hosts=a.hosts, segment_bytes=1 << 20, resume_ms=resume_ms,
                 boot_ms=3000, telemetry_ms=500 if quick else 1000, column_cache_mb=0,
                 cluster_toml=cli.replicas_toml(a))
    ok = True
    phases = []
    try:
        log(f"starting a 4-node cluster ({cl.hosts} hosts) in {cl.dir}")
        cl.start()
        cl.load_table(rows_n)
        expect = cl.scalar("SELECT count(*) || ' ' || sum(v) FROM t")
        cl.set_policy('mode = "static"\n')
        peak = cl.pgbench(script, calibrate, clients, tag="calibrate")["tps"]
        cl.master_log.flush()
        log_mark = os.path.getsize(os.path.join(cl.dir, "master.log"))  # the load's seeding before
        log(f"calibrated peak: {peak:.1f} queries/s")
        cl.set_policy(dynamic_policy(quick, "latency_target_ms = 15\n"))
        sampler = Sampler(cl)
        sampler.start()
        t_start = time.time()
        results = []
        for frac, secs in ((0.1, low_s), (0.9, high_s), (0.1, back_s)):
            t0 = time.time()
            log(f"offering {int(frac * 100)}% ({frac * peak:.1f} q/s) for {secs} s")
            r = cl.pgbench(script, secs, clients, rate=frac * peak, tag=f"p{int(frac * 100)}")
            phases.append((t0, time.time(), frac * peak))
            results.append(r)
        sampler.stop = True
        sampler.join()
        got = cl.scalar("SELECT count(*) || ' ' || sum(v) FROM t")
        with open(os.path.join(a.out, "decisions.csv"), "w") as f:
            f.write("decided_at|decision|reason|active_nodes|utilization|forecast_utilization|"
                    "predicted_idle_s|break_even_s|actions|duration_ms|outcome\n")
            for r in cl.sql("SELECT decided_at, decision, reason, active_nodes, utilization, forecast_utilization, "
                            "predicted_idle_s, break_even_s, actions, duration_ms, outcome "
                            "FROM wattdb_energy_decisions ORDER BY seq"):
                f.write("|".join(r) + "\n")
        wakes = cl.sql("SELECT decided_at, actions, duration_ms FROM wattdb_energy_decisions "
                       "WHERE decision = 'wake' AND outcome = 'ok' ORDER BY seq")
        sleeps = int(cl.scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'sleep'"))
        # Data each gear change moved: the MB its actions name (drains and refills), and the
        # copies seeded or caught up, from the master's log.
        moved = {}
        for decision, actions in cl.sql("SELECT decision, actions FROM wattdb_energy_decisions "
                                        "WHERE decision IN ('sleep', 'wake') AND outcome = 'ok' ORDER BY seq"):
            mb = sum(float(m) for m in re.findall(r"([0-9.]+) MB", actions))
            moved.setdefault(decision, []).append(mb)
        with open(os.path.join(cl.dir, "master.log")) as f:
            f.seek(log_mark)
            log_text = f.read()
        seeded = [int(b) for b in re.findall(r"follower seeded .* bytes=(\d+)", log_text)]
        caught_up = len(re.findall(r"asleep copy caught up", log_text))
        replicas = cl.scalar("SELECT count(*) FROM wattdb_replicas") + " copies of " + \
            cl.scalar("SELECT count(DISTINCT segment_id) FROM wattdb_replicas") + " segments"
        forbidden = cl.scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'sleep' "
                              "AND NOT (predicted_idle_s > break_even_s)")
    finally:
        cl.stop(keep=not ok)

    lat = sorted(x for r in results for x in r["latencies"])
    failed = sum(r["failed"] for r in results)
    # One-second bins.
    bins = {}
    for ts, ms in lat:
        bins.setdefault(int(ts - t_start), []).append(ms)
    end = int(max(p[1] for p in phases) - t_start) + 1
    timeline = []
    for s in range(end):
        vals = sorted(bins.get(s, []))
        offered = next((p[2] for p in phases if p[0] - t_start <= s < p[1] - t_start), 0)
        smp = [x for x in sampler.samples if s <= x[0] - t_start < s + 1]
        nodes = smp[-1][1] if smp else (timeline[-1][4] if timeline else 0)
        watts = sum(x[2] for x in smp) / len(smp) if smp else (timeline[-1][5] if timeline else 0)
        p99 = vals[min(len(vals) - 1, int(0.99 * len(vals)))] if vals else 0
        timeline.append((s, offered, len(vals), p99, nodes, watts))
    with open(os.path.join(a.out, "timeline.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["second", "offered_qps", "qps", "p99_ms", "nodes_on", "watts"])
        for row in timeline:
            w.writerow([row[0], f"{row[1]:.1f}", row[2], f"{row[3]:.1f}", row[4], f"{row[5]:.1f}"])

    # Decision -> first query served by each woken node.
    delays = []
    for decided_at, actions, _ in wakes:
        t_dec = wall(decided_at)
        for part in actions.split(";"):
            part = part.strip()
            if part.startswith("woke node "):
                node = int(part.split()[2])
                served = sampler.first_served_after(node, t_dec)
                delays.append((node, t_dec - t_start, (served - t_dec) if served else None))
    step_at = phases[1][0] - t_start
    before = [r[3] for r in timeline if step_at - 10 <= r[0] < step_at]
    bump = max([r[3] for r in timeline if step_at <= r[0] < step_at + 30] or [0])
    settled = [r[3] for r in timeline if phases[1][1] - t_start - 20 <= r[0] < phases[1][1] - t_start]
    lines = [f"# Load step 10% -> 90% -> 10% ({'quick' if quick else 'full'} run, {cl.hosts} hosts)", "",
             f"Peak (calibrated, all nodes on): {peak:.1f} queries/s; resume delay of the hosts: {resume_ms} ms.", ""]
    for node, at, d in delays:
        lines.append(f"- wake at {at:.1f} s: node {node} served its first query "
                     + (f"{d:.2f} s after the decision" if d is not None else "never (within the run)"))
    med = lambda v: sorted(v)[len(v) // 2] if v else 0  # noqa: E731
    lines += ["", f"p99 before the step (median of 1-s bins): {med(before):.1f} ms; worst 1-s p99 in the 30 s "
              f"after it: {bump:.1f} ms; at the end of the high phase: {med(settled):.1f} ms.",
              f"Sleeps: {sleeps}; sleeps the break-even rule forbids: {forbidden}.",
              f"Replicas at the end: {replicas}. Data moved per sleep (MB): "
              f"{', '.join(f'{m:.1f}' for m in moved.get('sleep', [])) or 'none'}; per wake (MB): "
              f"{', '.join(f'{m:.1f}' for m in moved.get('wake', [])) or 'none'}; followers seeded: "
              f"{len(seeded)} ({sum(seeded) / 2**20:.1f} MB); asleep copies caught up on waking: {caught_up}.",
              f"Failed queries: {failed}. Rows after the run: {got} (expected {expect})."]
    with open(os.path.join(a.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(4, 1, figsize=(8, 8), sharex=True)
    xs = [r[0] for r in timeline]
    ax[0].plot(xs, [r[1] for r in timeline], "k--", label="offered")
    ax[0].plot(xs, [r[2] for r in timeline], label="served")
    ax[0].set_ylabel("queries/s")
    ax[0].legend()
    ax[1].plot(xs, [r[3] for r in timeline], color="tab:red")
    ax[1].set_ylabel("p99 ms")
    ax[1].set_yscale("log")
    ax[2].step(xs, [r[4] for r in timeline], where="post", color="tab:green")
    ax[2].set_ylabel("nodes on")
    ax[2].set_ylim(0, 4.5)
    ax[3].plot(xs, smooth([r[5] for r in timeline]), color="tab:orange")
    ax[3].set_ylabel("cluster W (3 s mean)")
    ax[3].set_xlabel("seconds")
    for _, at, _d in delays:
        for axis in ax:
            axis.axvline(at, color="gray", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "timeline.png"), dpi=120)

    if got != expect:
        log(f"FAIL: rows changed: {got} != {expect}")
        ok = False
    if failed:
        log(f"FAIL: {failed} failed queries")
        ok = False
    if not any(d is not None for _, _, d in delays):
        log("FAIL: no woken node served a query")
        ok = False
    if forbidden != "0":
        log(f"FAIL: {forbidden} sleeps the break-even rule forbids")
        ok = False
    log("shape OK" if ok else "shape check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
