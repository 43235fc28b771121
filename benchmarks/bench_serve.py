"""Benchmark `fabricsim serve` (issue 25): a full concurrency sweep with mesh search, as a process.

Each case runs ``python -m fabricsim.cli serve ... --json`` in a fresh process and prints one
row: case, process wall seconds, its CPU seconds (user + system), peak RSS, points in the
sweep, min TBT and peak tokens/s per kW.  The target (issue 25 done-when) is the 2,048-chip
pod's sweep in <= 60 s.  Not a test: run it by hand (wall times on the shared 2-core VM vary
with the other agents' load; CPU seconds are the steadier figure).

    python benchmarks/bench_serve.py [CASE ...]

Measured on the project's 2-core VM (shared with ~6 agents, load average ~7), one run each:

    case                 wall s   cpu s  peak GiB  points  min TBT ms  peak tok/s/kW
    pod-deepseek-search    11.9    12.1      0.24      13       1.237         11,285   (each library's own MoE copy
                                                                                      rule: a layer planned per rule;
                                                                                      quiet machine)
    rack-gptoss-search      1.0     1.1      0.24      12       0.691        107,455   (same run)
    nvl72-gb300-kimi        3.0     3.1      0.24      15       4.027         10,115   (same run; DeepEP LL per expert)
    pod-deepseek-search    16.4    11.9      0.21      13       1.237         11,285   (Jalapeño's engine auto +
                                                                                      16.9 us per layer; load avg 3)
    rack-gptoss-search      1.9     1.2      0.21      12       0.691        107,455   (same run)
    nvl72-gb300-kimi        4.3     3.0      0.21      15       4.027         10,141   (same run)
    pod-deepseek-search    34.9    19.1      0.15      13       2.347         11,215   (serve2, final, rebased on main;
                                                                                      load avg 5.4)
    pod-deepseek-search    49.1    19.4      0.15      13       2.347         11,215   (serve2: prefill at 0.151 of
                                                                                      peak; + reachability cached;
                                                                                      load avg 5.6-6)
    rack-gptoss-search     11.8     4.9      0.15      12       0.392        109,080   (prefill at 0.151)
    nvl72-gb300-kimi       10.0     3.7      0.15      15       4.027         10,141   (prefill at 0.151)
    pod-deepseek-search    38.0    19.3      0.15      13       2.347         34,153   (serve2: + view_of cached,
                                                                                      O(1) pin check; load avg 6-8)
    pod-deepseek-search    52.5    28.4      0.15      13       2.347         34,153   (serve2: routing cached per
                                                                                      pinned graph, topo/graphcache.py)
    pod-deepseek-search   230.5   119.2      0.13      13       2.347         34,153   (before: routing rebuilt per price)
    pod-deepseek-search    76.7    42.5      0.12      13       3.921         32,419   (before prefill took one prompt
                                                                                      per TP group and Jalapeño launch 0)

Where the time went before (pod, deepseek-r1, one run): 263 distinct layer prices (201 decode, 62
prefill), ~0.4 s CPU each, most of it topo/routing rebuilding the 2,048-chip pod's link table,
routes and symmetry folds on every price() call.  serve() now pins its graph
(:func:`fabricsim.topo.graphcache.pinned`): inside the block link_table / route / fold are
cached by their inputs (the same TP / EP groups recur at every token count), and the JSON is
byte-identical to the uncached run's (tests/test_graphcache.py checks cached == uncached).  The
rest (pod, one profile) is the max-min solves themselves (each token count is a different size),
the all-to-all-v routes of MoE traffic whose non-empty pairs change with the token count (cache
misses: 430 of 2,650 routes), and plan()'s per-price setup.  The mesh search still prunes by the
roofline alone: with the solves this cheap a network lower bound was not needed for the target.
Wall time on the shared VM runs ~2-2.5x the CPU time at load average 6-8.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CASES = {
    "pod-deepseek-search": ["--model", "deepseek-r1", "--fabric", "jalapeno-pod"],
    "rack-gptoss-search": ["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack"],
    "nvl72-gb300-kimi": ["--model", "kimi-k2", "--fabric", "nvl72", "--set", "accelerator=gb300"],
}


def run(case: str) -> list[str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fabricsim.cli", "serve", *CASES[case], "--json"],
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    d = json.loads(out.stdout)
    return [case, f"{wall:.1f}", f"{cpu:.1f}", f"{after.ru_maxrss / 2**20:.2f}", str(len(d["points"])),
            f"{d['min_tbt_ms']:.3f}", f"{d['peak_tps_per_kw']:,.0f}"]


def main(argv: list[str]) -> None:
    cases = argv or list(CASES)
    head = ["case", "wall s", "cpu s", "peak GiB", "points", "min TBT ms", "peak tok/s/kW"]
    rows = [run(c) for c in cases]
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(x) for h, x in zip(head, w)))
    for r in rows:
        print("  ".join(c.rjust(x) for c, x in zip(r, w)))


if __name__ == "__main__":
    main(sys.argv[1:])
