"""What one agents.find_many scan costs with many processes running.

    .venv/bin/python bench/agents_scan.py                 # 500 extra processes, 7 rounds
    .venv/bin/python bench/agents_scan.py --extra 1000 --rounds 9 --paths 50

Starts `--extra` `sleep` processes (half of them with their working directory
inside one of the scanned worktrees, so the scan has agents to report), then,
in each round and in the same process, times side by side:

- find_many: git_ao.agents.find_many over `--paths` worktree directories;
- psutil, no open files: process_iter(["pid", "name", "cwd", "exe"]) alone,
  what the scan costs before it reads any process's open files;
- /proc readlinks: a bare loop reading /proc/<pid>/cwd and exe, what
  `ps -e -o pid,cwd` would print if ps had a cwd column (Linux only);
- ps -e: `ps -e -o pid=,comm=`, one process start and a listing.

Prints medians, per process, and the ratios against the two plain listings.
Nothing asserts a time; the sleeps are killed (by their own pids) at the end.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import psutil

from git_ao.agents import processes


def proc_readlinks() -> int:
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        for what in ("cwd", "exe"):
            try:
                os.readlink(f"/proc/{name}/{what}")
            except OSError:
                pass
        n += 1
    return n


def psutil_plain() -> int:
    return sum(1 for _ in psutil.process_iter(["pid", "name", "cwd", "exe"]))


def ps_listing() -> int:
    out = subprocess.run(["ps", "-e", "-o", "pid=,comm="], capture_output=True, text=True,
                         check=True).stdout
    return len(out.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", type=int, default=500, help="sleep processes to add")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--paths", type=int, default=10, help="worktree directories per scan")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="ao-agents-bench-")
    paths = [os.path.join(scratch, f"wt{i}") for i in range(args.paths)]
    for p in paths:
        os.mkdir(p)
    sleeps: list[subprocess.Popen] = []
    try:
        for i in range(args.extra):
            cwd = paths[i % len(paths)] if i % 2 == 0 else scratch
            sleeps.append(subprocess.Popen(["sleep", "3600"], cwd=cwd,
                                           stdin=subprocess.DEVNULL))
        n_procs = len(psutil.pids())
        found = sum(len(v) for v in processes.find_many(paths).values())
        jobs = {"find_many": lambda: processes.find_many(paths), "psutil, no open files":
                psutil_plain, "ps -e": ps_listing}
        if os.path.isdir("/proc/self"):
            jobs["/proc readlinks"] = proc_readlinks
        times: dict[str, list[float]] = {k: [] for k in jobs}
        for _ in range(args.rounds):
            for name, job in jobs.items():  # alternating, so load hits every job alike
                t0 = time.perf_counter()
                job()
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
        print(f"# agents scan: {n_procs} processes ({args.extra} extra sleeps), "
              f"{args.paths} worktrees, {found} agents found, {args.rounds} rounds")
        print(f"# {platform.platform()}, {os.cpu_count()} cores, psutil {psutil.__version__}, "
              f"load {' '.join(f'{x:.2f}' for x in load)}, euid {os.geteuid()}")
        print(f"{'job':24} {'median s':>10} {'per process us':>15} {'x /proc':>8} {'x ps':>7}")
        for name, m in med.items():
            ratio_proc = f"{m / med['/proc readlinks']:.1f}" if "/proc readlinks" in med else "-"
            print(f"{name:24} {m:10.4f} {m / n_procs * 1e6:15.1f} {ratio_proc:>8} "
                  f"{m / med['ps -e']:7.1f}")
    finally:
        for p in sleeps:
            p.kill()
        for p in sleeps:
            p.wait()
        for p in paths:
            os.rmdir(p)
        os.rmdir(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
