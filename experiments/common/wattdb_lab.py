"""A WattDB cluster for experiments: master + nodes started by the master (--manage-nodes) on
emulated Atom-class hosts (root: network namespaces, cgroup CPU caps, host agents) or as local
processes on loopback, with SQL through psql, power readings from wattdb_power, and
open-loop load through pgbench --rate.
"""
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port_pair():
    """Two consecutive free loopback ports below the ephemeral range."""
    for _ in range(1000):
        p = 20000 + random.randrange(12000)
        try:
            for q in (p, p + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", q))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port")


def claim_subnet():
    """A subnet of our own for emulated hosts (the tests claim theirs the same way)."""
    for u in range(20, 220):
        try:
            os.mkdir(f"/tmp/wattdb-emulated-net-{u}", 0o700)
            return u
        except FileExistsError:
            continue
    raise RuntimeError("no free subnet")


# A range of 1,000 rows: the nodes' work (reading and shipping rows) is the bottleneck.
RANGE_QUERY = """\\set k random(1, {hi})
\\set k2 :k + {span}
SELECT sum(v), count(*) FROM t WHERE k BETWEEN :k AND :k2;
"""


def dynamic_policy(quick, extra=""):
    """The experiments' dynamic policy: short windows in quick mode."""
    timing = ("window_s = 3\ncooldown_s = 2\ndown_s = 1\nhorizon_s = 5\n" if quick
              else "window_s = 15\ncooldown_s = 10\ndown_s = 2\nhorizon_s = 10\n")
    return ('mode = "dynamic"\nmin_active_nodes = 1\nscale_out_cpu = 0.80\nscale_in_cpu = 0.45\n'
            + timing + extra)


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def cap_process(pid, cpus, name):
    """Moves process `pid` (its node processes, started earlier, stay where they are) into a
    cgroup of its own capped at `cpus` cores, as an emulated host's agent does for its node;
    returns the cgroup's directories (cgroup v2, or v1's cpu hierarchy)."""
    # As power/host/cgroup.cc caps an emulated host (cpu_period_ms 10): a cap below the
    # kernel's 1 ms minimum quota gets a longer period, never a larger share.
    period = max(10000, int(1000 / cpus) + 1)
    quota = max(1000, int(cpus * period))
    controllers = "/sys/fs/cgroup/cgroup.controllers"
    if os.path.exists(controllers) and "cpu" in open(controllers).read():
        d = f"/sys/fs/cgroup/wattdb/{name}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/cpu.max", "w") as f:
            f.write(f"{quota} {period}")
    else:
        d = f"/sys/fs/cgroup/cpu/wattdb/{name}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/cpu.cfs_period_us", "w") as f:
            f.write(str(period))
        with open(f"{d}/cpu.cfs_quota_us", "w") as f:
            f.write(str(quota))
    with open(f"{d}/cgroup.procs", "w") as f:
        f.write(str(pid))
    return d


def pin_threads(pid, cores):
    """Confines every thread of process `pid` to the CPUs `cores` (threads it starts later
    inherit their creator's set); passes again until no new thread shows up."""
    done = set()
    while True:
        tids = set(os.listdir(f"/proc/{pid}/task")) - done
        if not tids:
            return
        for tid in tids:
            try:
                os.sched_setaffinity(int(tid), cores)
            except (ProcessLookupError, FileNotFoundError):
                pass
        done |= tids


def uncap(cgroup, pid):
    """Moves `pid` back to the root cgroup and removes `cgroup`."""
    root = os.path.dirname(os.path.dirname(cgroup))
    try:
        with open(f"{root}/cgroup.procs", "w") as f:
            f.write(str(pid))
    except OSError:
        pass
    try:
        os.rmdir(cgroup)
    except OSError:
        pass


class Cluster:
    def __init__(self, build="build", nodes=4, hosts=None, cpus=0.5, segment_bytes=1 << 20,
                 resume_ms=1000, boot_ms=5000, telemetry_ms=1000, policy='mode = "manual"\n', balance=True,
                 master_cpus=None, column_cache_mb=None, cluster_toml=""):
        self.bin = os.path.join(ROOT, build, "bin")
        if hosts is None:
            hosts = "emulated" if os.geteuid() == 0 else "loopback"
        self.hosts = hosts
        self.nodes = nodes
        self.balance = balance
        self.master_cpus = master_cpus  # a CPU cap for the master too (emulated hosts only)
        self.master_cgroup = None
        self.dir = tempfile.mkdtemp(prefix="wattdb_exp_")
        self.port = free_port_pair()
        self.net = claim_subnet() if hosts == "emulated" else None
        net = self.net
        node_tables = ""
        for i in range(1, nodes + 1):
            # Emulated hosts have addresses of their own; local processes need free ports.
            port = 7100 + i if hosts == "emulated" else free_port_pair()
            power = 'power = "wol"\n' if hosts == "emulated" else ""
            node_tables += f"[[node]]\nid = {i}\nport = {port}\n{power}"
        hosts_toml = (f'[hosts]\nmode = "emulated"\nsubnet = "10.213.{net}"\nbridge = "wdbx{net}"\n'
                      if hosts == "emulated" else "")
        self.master = None
        self.config = os.path.join(self.dir, "cluster.toml")
        self.policy_path = os.path.join(self.dir, "policy.toml")
        with open(self.config, "w") as f:
            f.write(f"""[cluster]
data_dir = "{self.dir}/data"
segment_bytes = {segment_bytes}
telemetry_interval_ms = {telemetry_ms}
heartbeat_timeout_ms = {max(3000, 4 * telemetry_ms)}
{"" if column_cache_mb is None else f"column_cache_mb = {column_cache_mb}"}
{cluster_toml}
[master]
pg_port = {self.port}
cluster_port = {self.port + 1}
energy_policy = "policy.toml"
[auth]
method = "trust"
{hosts_toml}
[profile.atom]
cpus = {cpus}
resume_ms = {resume_ms}
boot_ms = {boot_ms}
[power]
meter_interval_ms = 500
{node_tables}""")
        self.set_policy_file(policy)
        self.master = None

    def set_policy_file(self, toml):
        with open(self.policy_path, "w") as f:
            f.write(toml)

    def set_policy(self, toml):
        self.set_policy_file(toml)
        self.sql("ALTER SYSTEM RELOAD ENERGY POLICY")

    def start(self):
        self.master_log = open(os.path.join(self.dir, "master.log"), "w")
        self.master = subprocess.Popen(
            [os.path.join(self.bin, "wattdb-master"), "--manage-nodes", "--config", self.config,
             "--log-level", "info"] + ([] if self.balance else ["--no-balance"]),
            stdout=self.master_log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.master.poll() is not None:
                raise RuntimeError(f"master exited; see {self.dir}/master.log")
            try:
                if self.scalar("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'") == str(self.nodes):
                    if self.master_cpus and self.hosts == "emulated":
                        self.master_cgroup = cap_process(self.master.pid, self.master_cpus, f"exp_master_{self.port}")
                    return
            except RuntimeError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"cluster did not come up; see {self.dir}")

    def stop(self, keep=False):
        if self.master_cgroup:
            uncap(self.master_cgroup, self.master.pid)
            self.master_cgroup = None
        if self.master and self.master.poll() is None:
            self.master.send_signal(signal.SIGTERM)
            try:
                self.master.wait(90)
            except subprocess.TimeoutExpired:
                self.master.kill()
                self.master.wait()
        if self.net is not None:
            try:
                os.rmdir(f"/tmp/wattdb-emulated-net-{self.net}")
            except OSError:
                pass
            self.net = None
        if keep or os.environ.get("WATTDB_EXP_KEEP"):
            log(f"cluster directory kept: {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def node_pid(self, node_id):
        """The pid of node `node_id`'s process of this cluster (None if it is not running)."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if (args and args[0].endswith("wattdb-node") and self.config in args
                    and "--id" in args and args[args.index("--id") + 1:][:1] == [str(node_id)]):
                return int(pid)
        return None

    def psql_args(self):
        return ["psql", "-X", "-q", "-At", "-F", "|", "-h", "127.0.0.1", "-p", str(self.port), "-U", "wattdb",
                "-d", "wattdb", "-v", "ON_ERROR_STOP=1"]

    def sql(self, q, timeout=600):
        r = subprocess.run(self.psql_args() + ["-c", q], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{q[:80]}: {r.stderr.strip()}")
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def scalar(self, q):
        rows = self.sql(q)
        return rows[0][0] if rows else None

    def joules(self):
        """Cumulative joules and current state per component (master, switch, node1, ...)."""
        out = {}
        for comp, node, state, joules in self.sql(
                "SELECT component, node_id, state, joules FROM wattdb_power"):
            out[comp] = (float(joules), state)
        return out

    def segments_per_node(self):
        """{node id: segments it owns}."""
        return {int(node): int(cnt) for node, cnt in self.sql(
            "SELECT node_id, count(*) FROM wattdb_segments GROUP BY node_id ORDER BY node_id")}

    def active_nodes(self):
        return int(self.scalar("SELECT count(*) FROM wattdb_nodes WHERE admin_state = 'active' AND state = 'up'"))

    def load_table(self, rows, pad=200):
        self.sql("CREATE TABLE t (k INT PRIMARY KEY, v INT, pad TEXT)")
        step = 20000
        for lo in range(1, rows + 1, step):
            hi = min(rows, lo + step - 1)
            self.sql(f"INSERT INTO t SELECT g, g % 1000, repeat('p', {pad}) FROM generate_series({lo}, {hi}) g")

    def pgbench(self, script, seconds, clients, rate=None, tag="run"):
        """Runs pgbench; returns dict(tps, count, failed, p50_ms, p99_ms, latencies)."""
        sdir = os.path.join(self.dir, f"pgb_{tag}_{int(time.time() * 1000)}")
        os.makedirs(sdir)
        spath = os.path.join(sdir, "script.sql")
        with open(spath, "w") as f:
            f.write(script)
        cmd = ["pgbench", "-n", "-h", "127.0.0.1", "-p", str(self.port), "-U", "wattdb", "-f", spath,
               "-c", str(clients), "-j", str(min(clients, 4)), "-T", str(int(seconds)), "-l",
               "--log-prefix", os.path.join(sdir, "log")]
        if rate:
            cmd += ["--rate", f"{rate:.2f}"]
        cmd.append("wattdb")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
        lat = []
        for name in os.listdir(sdir):
            if not name.startswith("log"):
                continue
            with open(os.path.join(sdir, name)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 6 and parts[2] not in ("skipped", "failed"):
                        lat.append((int(parts[4]) + int(parts[5]) / 1e6, int(parts[2]) / 1000.0))
        lat.sort()
        failed = 0
        m = re.search(r"number of failed transactions: (\d+)", r.stdout)
        if m:
            failed = int(m.group(1))
        errors = [ln for ln in r.stderr.splitlines() if "ERROR" in ln or "error" in ln]
        vals = sorted(x[1] for x in lat)

        def pct(p):
            return vals[min(len(vals) - 1, int(p * len(vals)))] if vals else float("nan")

        return {"count": len(vals), "tps": len(vals) / seconds, "failed": failed + (r.returncode != 0 and not vals),
                "p50_ms": pct(0.5), "p99_ms": pct(0.99), "latencies": lat, "errors": errors[:5],
                "returncode": r.returncode}


def ep_metric(levels, watts):
    """SPECpower-style energy proportionality: EP = 2 - 2 * A, A = area under power / peak power
    over load 0..1 (trapezoids); levels are fractions of peak load (0 = active idle)."""
    pts = sorted(zip(levels, watts))
    peak = pts[-1][1]  # the power at 100% load
    area = 0.0
    for (l0, w0), (l1, w1) in zip(pts, pts[1:]):
        area += (l1 - l0) * (w0 + w1) / 2 / peak
    return 2 - 2 * area
