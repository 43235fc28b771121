"""Benchmark: the N-1 rail-switch sweep on the full Jalapeño pod for the 2,048-wide all-to-all.

Runs :func:`fabricsim.collectives.whatif.sweep` over every rail switch (64 scenarios)
with 1 and with 2 worker processes and prints the scenario count, wall time, the
speed-up, the slowdowns found (symmetric failures must agree) and whether the two
runs are identical.  Not a test: run it by hand on a quiet machine.

    python benchmarks/bench_sweep.py [--racks 16] [--leaf switched|static] [--workers 1,2]
                                     [--class rail-switch] [--algorithm direct] [--size 1GiB]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from fabricsim.cli import parse_size
from fabricsim.collectives.whatif import LocalRunner, sweep

_size = parse_size   # the CLI's: B, KiB, MiB, GiB, KB, MB, GB


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", type=int, default=16)
    ap.add_argument("--leaf", default="switched", choices=("switched", "static"))
    ap.add_argument("--rail-wiring", default="per-lane", choices=("per-lane", "per-port"))
    ap.add_argument("--class", dest="cls", default="rail-switch")
    ap.add_argument("--workers", default="1,2", help="worker counts to time, comma-separated")
    ap.add_argument("--algorithm", default="direct", help="direct is what auto picks for this case")
    ap.add_argument("--size", default="1GiB")
    args = ap.parse_args(argv)
    params = {"racks": args.racks, "leaf": args.leaf, "rail_wiring": args.rail_wiring}
    size = _size(args.size)
    results = {}
    for w in (int(x) for x in args.workers.split(",")):
        load = os.getloadavg()[0]     # other work on the machine stretches the wall time

        def progress(done, total, res, t0=time.perf_counter()):
            if done == 1 or done % 8 == 0 or done == total:
                print(f"  [{w} worker(s)] {done}/{total} scenarios, {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        cpu0 = _cpu()
        s = sweep("jalapeno-pod", params, args.cls, collective="all-to-all", size_bytes=size,
                  algorithm=args.algorithm, runner=LocalRunner(workers=w), progress=progress)
        wall = time.perf_counter() - t0
        cpu = _cpu() - cpu0
        results[w] = (s, wall)
        sm = s.summary
        print(f"workers={w}: {sm['count']} scenarios in {wall:.1f} s wall, {cpu:.1f} s CPU in all processes "
              f"({cpu / (sm['count'] + 1):.2f} s CPU per price, baseline included; load average before "
              f"{load:.2f}); slowdown min {sm['min']:.6f} median {sm['median']:.6f} "
              f"max {sm['max']:.6f}, distinct values {sm['distinct']}, partial {sm['partial']}", flush=True)
    ws = sorted(results)
    if len(ws) > 1:
        base_w, base_t = ws[0], results[ws[0]][1]
        for w in ws[1:]:
            same = json.dumps(results[w][0].as_dict(), sort_keys=True) == \
                json.dumps(results[base_w][0].as_dict(), sort_keys=True)
            print(f"speed-up {base_w} -> {w} workers: {base_t / results[w][1]:.2f}x; results identical: {same}")
    s = results[ws[-1]][0]
    print(f"baseline {s.baseline.time_s * 1e6:,.1f} us ({s.algorithm}); worst: {s.scenarios[0]['failed']} "
          f"x{s.scenarios[0]['slowdown']:.6f}; best: {s.scenarios[-1]['failed']} x{s.scenarios[-1]['slowdown']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
