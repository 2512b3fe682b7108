#!/usr/bin/env python3
"""How libgomp's wait policy behaves beside another busy process (driver of wait_policy.sh).

Runs `halo train ... --threads T --json` for every (workload, threads, policy, hogs) cell, RUNS
rounds, each round visiting the cells in a different (rotated) order so that a disturbance of a
few minutes spreads over all cells instead of one. A cell's value is `epoch_time_median_s` (the
median over epochs), and the table shows the median over rounds with the range (min-max).

Noise control: others may use the machine while this runs. Around each run the busy CPU time of
the whole machine (/proc/stat) is compared with what this run used itself (halo's CPU time from
wait4, the hogs' from /proc/PID/stat); when the rest exceeds FOREIGN_LIMIT (default 10%) of the
machine, the run is discarded, the script waits for a quiet machine and repeats it (at most
RETRIES times, then keeps it and counts it as disturbed).
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def env_list(name, default):
    return os.environ.get(name, default).split()


def cpu_busy_total():
    """Busy and total jiffies of all CPUs since boot (iowait counts as idle)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return total - idle, total


def proc_cpu(pid):
    """utime + stime of a live process, in jiffies."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def wait_quiet(limit, max_wait_s=600):
    """Waits until the machine is at most `limit` busy over a 1 s window; returns the time waited
    beyond that one window (s)."""
    start = time.time()
    while True:
        b0, t0 = cpu_busy_total()
        time.sleep(1)
        b1, t1 = cpu_busy_total()
        if (b1 - b0) <= limit * (t1 - t0) or time.time() - start > max_wait_s:
            return max(0.0, time.time() - start - 1)


class Hogs:
    """`n` busy loops, loop i pinned to core i mod nproc."""

    def __init__(self, n):
        self.procs = []
        for i in range(n):
            cmd = ["bash", "-c", "while :; do :; done"]
            cmd = ["taskset", "-c", str(i % NCPU)] + cmd
            self.procs.append(subprocess.Popen(cmd))
        if n:
            time.sleep(0.3)

    def cpu(self):
        return sum(proc_cpu(p.pid) for p in self.procs)

    def stop(self):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def policy_env(policy):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    if policy == "default":
        # libgomp's own default: with neither variable set it spins 300000 times (and 100 when
        # there are more threads than CPUs), exactly as with GOMP_SPINCOUNT=300000 alone. It is set
        # explicitly because halo applies its own default when neither variable is set.
        env["GOMP_SPINCOUNT"] = "300000"
    elif policy == "halo":
        pass
    elif policy in ("passive", "active"):
        env["OMP_WAIT_POLICY"] = policy
    elif policy.startswith("spin="):
        env["GOMP_SPINCOUNT"] = policy[len("spin="):]
    else:
        sys.exit(f"wait_policy: unknown policy {policy}")
    return env


def run_once(halo, flags, threads, policy, hogs, json_path):
    """One run; returns (epoch median s, wall s, foreign fraction of the machine)."""
    h = Hogs(hogs)
    try:
        hog0 = h.cpu()
        b0, t0 = cpu_busy_total()
        w0 = time.time()
        p = subprocess.Popen([halo, "train", *flags, "--threads", str(threads), "--json", json_path],
                             env=policy_env(policy), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.time() - w0
        b1, t1 = cpu_busy_total()
        hog1 = h.cpu()
    finally:
        h.stop()
    err = p.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"wait_policy: halo failed ({policy}, {threads} threads):\n{err}")
    own = (usage.ru_utime + usage.ru_stime) * CLK_TCK + (hog1 - hog0)
    foreign = max(0.0, (b1 - b0) - own) / max(1, t1 - t0)
    with open(json_path) as f:
        epoch = json.load(f)["epoch_time_median_s"]
    return epoch, wall, foreign


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    halo = sys.argv[1] if len(sys.argv) > 1 else "build/cpu-release/tools/halo/halo"
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/results/omp_wait.md"
    os.chdir(root)
    if not os.access(halo, os.X_OK):
        sys.exit(f"wait_policy: no halo binary at {halo}")
    runs = int(os.environ.get("RUNS", "5"))
    policies = env_list("POLICIES", "default passive spin=1000 spin=10000 spin=30000 spin=100000")
    one_thread = env_list("POLICIES_1", "default")
    hog_counts = [int(h) for h in env_list("HOGS", "0 1 2")]
    thread_counts = [int(t) for t in env_list("THREADS", "2 1")]
    foreign_limit = float(os.environ.get("FOREIGN_LIMIT", "0.10"))
    retries = int(os.environ.get("RETRIES", "3"))
    cora = os.environ.get("CORA", "build/bench/data/planetoid/cora")

    # Cora: 2708 nodes, an epoch is ~2 ms of many short parallel loops (the worst case for
    # waiting); the synthetic graph (20000 nodes) has ~8x longer epochs.
    workloads = []
    if os.path.isdir(cora):
        workloads.append(("cora", ["--dataset", cora, "--offline", "--epochs", "100"]))
    workloads.append(("synthetic-20k",
                      ["--dataset", "synthetic", "--synthetic-nodes", "20000", "--epochs", "30"]))
    workloads = [w for w in workloads if w[0] in env_list("WORKLOADS", "cora synthetic-20k")]

    cells = []
    for name, flags in workloads:
        for t in thread_counts:
            for policy in (policies if t > 1 else one_thread):
                for hogs in hog_counts:
                    cells.append((name, tuple(flags), t, policy, hogs))
    results = {c: [] for c in cells}
    disturbed = 0
    discarded = 0
    waited = 0.0
    loads = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "r.json")
        for r in range(runs):
            loads.append(os.getloadavg()[0])
            order = cells[r * len(cells) // max(1, runs):] + cells[:r * len(cells) // max(1, runs)]
            if r % 2:
                order.reverse()
            for c in order:
                name, flags, t, policy, hogs = c
                for attempt in range(retries + 1):
                    waited += wait_quiet(foreign_limit)
                    epoch, wall, foreign = run_once(halo, list(flags), t, policy, hogs, json_path)
                    if foreign <= foreign_limit:
                        break
                    if attempt == retries:
                        disturbed += 1
                    else:
                        discarded += 1
                results[c].append(epoch)
                print(f"wait_policy: round {r + 1}/{runs} {name} threads {t} {policy:>12} hog {hogs}:"
                      f" {epoch * 1e3:8.2f} ms/epoch (wall {wall:5.1f} s, foreign {foreign:.0%})",
                      file=sys.stderr, flush=True)

    def cell(c):
        v = sorted(results[c])
        return f"{statistics.median(v) * 1e3:.2f} ({v[0] * 1e3:.2f}-{v[-1] * 1e3:.2f})"

    names = ("RUNS", "POLICIES", "POLICIES_1", "HOGS", "THREADS", "WORKLOADS", "CORA",
             "FOREIGN_LIMIT", "RETRIES")
    settings = " ".join(f"{k}={os.environ[k]!r}" if " " in os.environ[k] else f"{k}={os.environ[k]}"
                        for k in names if k in os.environ) or f"RUNS={runs}"
    cpu_model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = [
        "# libgomp wait policy beside a CPU hog", "",
        f"Machine: {NCPU} cores (`nproc`), {cpu_model}, {os.uname().sysname} {os.uname().release},"
        f" {gcc}, {time.strftime('%Y-%m-%d', time.gmtime())}.",
        f"Command: `{settings} bash bench/omp/wait_policy.sh {halo}`"
        f" ({(time.time() - started) / 60:.0f} min).", "",
        "Each cell: `halo train FLAGS --threads T --json`, `epoch_time_median_s` (median over the"
        f" epochs) in ms: the median of {runs} runs, (min-max) of those runs. The {runs} rounds visit"
        " the cells in rotated orders. Hog N: N `while :; do :; done` loops, loop i pinned to core i."
        " `default` is libgomp's own default (`GOMP_SPINCOUNT=300000`, the same as neither variable"
        " set); `spin=N` is `GOMP_SPINCOUNT=N`; `passive` is `OMP_WAIT_POLICY=passive` (no spinning);"
        " `halo` is what `halo` does when the user sets neither variable.", "",
        f"Noise: a run during which other processes used more than {foreign_limit:.0%} of the"
        f" machine was discarded and repeated ({discarded} discarded, {disturbed} kept after"
        f" {retries} repeats); waits for a quiet machine (beyond a 1 s check before each run) took {waited / 60:.1f} min; 1-minute load at"
        f" the start of each round: {', '.join(f'{l:.1f}' for l in loads)}.",
    ]
    for name, flags in workloads:
        lines += ["", f"## {name} (`{' '.join(flags)}`)", "",
                  "| threads | policy | " + " | ".join(f"hog {h}" for h in hog_counts) + " |",
                  "| --- | --- | " + " | ".join("---" for _ in hog_counts) + " |"]
        for t in thread_counts:
            for policy in (policies if t > 1 else one_thread):
                row = [cell((name, tuple(flags), t, policy, h)) for h in hog_counts]
                lines.append(f"| {t} | {policy} | " + " | ".join(row) + " |")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wait_policy: wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
