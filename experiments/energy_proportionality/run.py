#!/usr/bin/python3
"""SPECpower-style energy-proportionality sweep of a 4-node Atom-class WattDB cluster.

Calibrates the peak throughput (closed loop, all nodes on), then offers 100%, 90%, ... 10% of
it and active idle (open loop: pgbench --rate), once with the energy policy `static` (every
node on) and once `dynamic` (the controller sleeps and wakes nodes). Per level: throughput,
p50/p99 latency, watts per component (master and switch included) and joules per query.
Reports EP = 2 - 2 * A (A: area under power / peak power over load, trapezoids) for both,
writes results.csv, power_vs_load.png and result.md into --out.

usage: experiments/energy_proportionality/run.py [--quick] [--out DIR] [--build DIR]
                                                 [--hosts emulated|loopback]
--quick: levels 100% and 20% only, short phases (under 3 minutes); checks the shape:
dynamic draws less than static at 20%, no failed query, every row still there.
"""
import csv
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from wattdb_lab import RANGE_QUERY, Cluster, dynamic_policy, ep_metric, log  # noqa: E402
import cli  # noqa: E402


def run_level(cl, script, level, peak, settle, measure, clients):
    """Offers `level` x peak for settle + measure seconds; measures over the last `measure`."""
    result = {}
    bench = None
    if level > 0:
        def go():
            result.update(cl.pgbench(script, settle + measure, clients, rate=level * peak,
                                     tag=f"l{int(level * 100)}"))
        bench = threading.Thread(target=go)
        bench.start()
    time.sleep(settle)
    t0, j0 = time.time(), cl.joules()
    nodes_seen = []
    while time.time() < t0 + measure:
        nodes_seen.append(cl.active_nodes())
        time.sleep(1)
    t1, j1 = time.time(), cl.joules()
    if bench:
        bench.join()
    secs = t1 - t0
    watts = {c: (j1[c][0] - j0[c][0]) / secs for c in j1 if c in j0}
    lat = [ms for (ts, ms) in result.get("latencies", []) if t0 <= ts <= t1]
    lat.sort()
    pct = (lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan"))
    tps = len(lat) / secs
    total = sum(watts.values())
    return {
        "level": level, "offered_tps": level * peak, "tps": tps, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        "failed": result.get("failed", 0), "watts": total,
        "node_watts": sum(w for c, w in watts.items() if c.startswith("node")),
        "master_watts": watts.get("master", 0), "switch_watts": watts.get("switch", 0),
        "joules_per_query": total / tps if tps > 0 else float("nan"),
        "ops_per_watt": tps / total if total > 0 else 0,
        "active_nodes": sum(nodes_seen) / max(1, len(nodes_seen)),
        "per_node": {c: w for c, w in watts.items() if c.startswith("node")},
    }


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    peak_w = max(r["watts"] for r in rows if r["mode"] == "static" and r["level"] == 1.0)
    for mode, style in (("static", "o-"), ("dynamic", "s-")):
        pts = sorted((r["level"] * 100, r["watts"]) for r in rows if r["mode"] == mode)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{mode}")
    ax.plot([0, 100], [0, peak_w], "k--", label="ideal (proportional)")
    ax.set_xlabel("load (% of peak throughput)")
    ax.set_ylabel("cluster power, W (4 nodes + master + switch)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("WattDB energy proportionality")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "power_vs_load.png"), dpi=120)


def main():
    ap = cli.parser(__doc__, os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"), raw_description=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    quick = a.quick
    rows_n = 60000 if quick else 120000
    levels = [1.0, 0.2] if quick else [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    settle, measure = (14, 8) if quick else (40, 40)
    calibrate = 8 if quick else 30
    clients = 8
    script = RANGE_QUERY.format(hi=rows_n - 1000, span=999)

    cl = Cluster(build=a.build, nodes=4, hosts=a.hosts, segment_bytes=1 << 20, resume_ms=1000,
                 boot_ms=3000, telemetry_ms=1000 if not quick else 500,
                 cluster_toml=cli.replicas_toml(a))
    ok = True
    rows = []
    try:
        log(f"starting a 4-node cluster ({cl.hosts} hosts) in {cl.dir}")
        cl.start()
        cl.load_table(rows_n)
        expect = cl.scalar("SELECT count(*) || ' ' || sum(v) FROM t")
        log(f"loaded {rows_n} rows; segments per node: "
            f"{cl.sql('SELECT node_id, count(*) FROM wattdb_segments GROUP BY node_id ORDER BY 1')}")
        cl.set_policy('mode = "static"\n')
        cal = cl.pgbench(script, calibrate, clients, tag="calibrate")
        peak = cal["tps"]
        log(f"calibrated peak: {peak:.1f} queries/s (p50 {cal['p50_ms']:.1f} ms, {clients} clients)")
        for mode in ("static", "dynamic"):
            cl.set_policy('mode = "static"\n' if mode == "static" else dynamic_policy(quick))
            if mode == "static":
                deadline = time.time() + 60
                while cl.active_nodes() < 4 and time.time() < deadline:
                    time.sleep(0.5)
            for level in levels:
                r = run_level(cl, script, level, peak, settle, measure, clients)
                r["mode"] = mode
                rows.append(r)
                log(f"{mode:7s} {int(level * 100):3d}%: {r['tps']:7.1f} q/s  p50 {r['p50_ms']:7.1f} ms  "
                    f"p99 {r['p99_ms']:7.1f} ms  {r['watts']:6.1f} W  {r['joules_per_query']:6.2f} J/q  "
                    f"nodes {r['active_nodes']:.1f}  failed {r['failed']}")
        got = cl.scalar("SELECT count(*) || ' ' || sum(v) FROM t")
        with open(os.path.join(a.out, "decisions.csv"), "w") as f:
            f.write("decided_at|decision|reason|active_nodes|utilization|forecast_utilization|"
                    "predicted_idle_s|break_even_s|actions|duration_ms|outcome\n")
            for r in cl.sql("SELECT decided_at, decision, reason, active_nodes, utilization, forecast_utilization, "
                            "predicted_idle_s, break_even_s, actions, duration_ms, outcome "
                            "FROM wattdb_energy_decisions ORDER BY seq"):
                f.write("|".join(r) + "\n")
        decisions = cl.sql("SELECT decision, count(*) FROM wattdb_energy_decisions WHERE decision <> 'none' "
                           "GROUP BY decision ORDER BY 1")
        forbidden = cl.scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'sleep' "
                              "AND NOT (predicted_idle_s > break_even_s)")
        if got != expect:
            log(f"FAIL: rows changed: {got} != {expect}")
            ok = False
        if forbidden != "0":
            log(f"FAIL: {forbidden} sleep decision(s) the break-even rule forbids")
            ok = False
    finally:
        cl.stop(keep=not ok)

    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "load_pct", "offered_qps", "qps", "p50_ms", "p99_ms", "failed", "watts", "node_watts",
                    "master_watts", "switch_watts", "joules_per_query", "queries_per_watt", "active_nodes",
                    "watts_by_node"])
        for r in rows:
            w.writerow([r["mode"], int(r["level"] * 100), f"{r['offered_tps']:.1f}", f"{r['tps']:.1f}",
                        f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", r["failed"], f"{r['watts']:.2f}",
                        f"{r['node_watts']:.2f}", f"{r['master_watts']:.2f}", f"{r['switch_watts']:.2f}",
                        f"{r['joules_per_query']:.3f}", f"{r['ops_per_watt']:.3f}", f"{r['active_nodes']:.2f}",
                        " ".join(f"{c}={v:.1f}" for c, v in sorted(r["per_node"].items()))])
    plot(rows, a.out)
    lines = [f"# Energy proportionality ({'quick' if quick else 'full'} run, {cl.hosts} hosts)", "",
             f"Peak (calibrated, static, {clients} clients): {peak:.1f} queries/s.", "",
             "| mode | load | q/s | p50 ms | p99 ms | W | J/query | q/W | nodes on | failed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {int(r['level'] * 100)}% | {r['tps']:.1f} | {r['p50_ms']:.1f} | "
                     f"{r['p99_ms']:.1f} | {r['watts']:.1f} | {r['joules_per_query']:.2f} | "
                     f"{r['ops_per_watt']:.2f} | {r['active_nodes']:.1f} | {r['failed']} |")
    for mode in ("static", "dynamic"):
        pts = [(r["level"], r["watts"]) for r in rows if r["mode"] == mode]
        if len(pts) > 2:
            ep = ep_metric([p[0] for p in pts], [p[1] for p in pts])
            node_pts = [(r["level"], r["node_watts"]) for r in rows if r["mode"] == mode]
            ep_nodes = ep_metric([p[0] for p in node_pts], [p[1] for p in node_pts])
            lines.append(f"\nEP {mode}: {ep:.3f} (cluster with master and switch), {ep_nodes:.3f} (nodes only)")
        jq = {r["level"]: r["joules_per_query"] for r in rows if r["mode"] == mode}
        if 0.2 in jq and 1.0 in jq:
            lines.append(f"\nJ/query at 20% / at 100%, {mode}: {jq[0.2] / jq[1.0]:.2f}")
    lines.append(f"\nDecisions: {decisions}; sleeps the break-even rule forbids: {forbidden}.")
    failed = sum(r["failed"] for r in rows)
    lines.append(f"Failed queries: {failed}. Rows after the run: {got} (expected {expect}).")
    with open(os.path.join(a.out, "result.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    low = min(levels[levels.index(0.2)] if 0.2 in levels else levels[-1], 0.2)
    st = [r for r in rows if r["mode"] == "static" and r["level"] == low]
    dy = [r for r in rows if r["mode"] == "dynamic" and r["level"] == low]
    if not (st and dy and dy[0]["watts"] < st[0]["watts"]):
        log("FAIL: dynamic does not draw less than static at low load")
        ok = False
    if failed:
        log(f"FAIL: {failed} failed queries")
        ok = False
    log("shape OK" if ok else "shape check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
