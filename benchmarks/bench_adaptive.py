"""Benchmark ``--split adaptive`` (multipath max-min fair rates, issue 24 item 1).

Each case runs as its own CLI process and prints one row: case, wall s, CPU s (user +
sys of the child), the headline figure and its target.  Not a test: run by hand on a
quiet machine (wall times on the shared 2-core VM vary by 2x or more).

    python benchmarks/bench_adaptive.py [CASE ...]
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

FAB = [sys.executable, "-m", "fabricsim.cli"]
POD_A2A = ["all-to-all", "--fabric", "jalapeno-pod", "--fail", "rail:3", "--group-size", "2048", "--size", "1GiB",
           "--algorithm", "direct", "--json"]
CASES = {
    # name: (args, what, target)
    "pod-rail3-adaptive": (["whatif", *POD_A2A, "--split", "adaptive"],
                           "pod 2,048 all-to-all, rail 3 lost, adaptive", "bandwidth slowdown 8/7 = 1.142857"),
    "pod-rail3-equal": (["whatif", *POD_A2A], "the same, equal ECMP shares (today's default)", "x1.99 (issue 24)"),
    "pod-rail3-static": (["whatif", *POD_A2A, "--set", "leaf=static"], "the same, rail-only static leaf",
                         "bandwidth slowdown 8/7"),
    "rack-price-adaptive": (["price", "all-to-all", "--fabric", "jalapeno-rack", "--group-size", "128", "--size",
                             "1GiB", "--algorithm", "direct", "--split", "adaptive", "--json"],
                            "rack 128 all-to-all, adaptive", "equal's time (intact: nothing to rebalance)"),
}


def run(name: str) -> None:
    args, what, target = CASES[name]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([*FAB, *args], capture_output=True, text=True, env={**os.environ})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode:
        print(f"{name:22s} FAILED: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
        return
    d = json.loads(out.stdout)
    if "bandwidth_slowdown" in d:
        fig = f"bandwidth x{d['bandwidth_slowdown']:.6f}, slowdown x{d['slowdown']:.5f}"
    else:
        fig = f"time {d['time_s'] * 1e6:,.2f} us, busbw {d['busbw_GBps']:,.1f} GB/s"
    print(f"{name:22s} {wall:7.1f} s wall {cpu:7.1f} s CPU  {fig}  (target: {target}; {what})", flush=True)


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        run(case)
