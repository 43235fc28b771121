"""Benchmark: an N-1 sweep on a loopback Dask cluster of 1 and of 2 workers, and the speed-up.

Starts a ``distributed.LocalCluster`` on 127.0.0.1 (one thread per worker process)
for each worker count, runs :func:`fabricsim.collectives.whatif.sweep` through a
:class:`~fabricsim.collectives.whatif.dask_runner.DaskRunner` and prints the wall time of
the sweep (cluster start-up shown apart; each worker's first task builds the fabric,
which is counted), the speed-up over 1 worker and whether every run gave the same
ranked scenarios (and the in-process ``LocalRunner`` too with ``--local``).
Not a test: run it by hand on a quiet machine; needs ``pip install 'fabricsim[dask]'``.
Measured on a 2-core VM (defaults, 64 scenarios): in-process 10.9 s; Dask 1 worker
10.5 s, 2 workers 5.8 s: x1.80; identical results.

    python benchmarks/bench_dask.py [--racks 4] [--class rail-switch] [--group-size 512]
                                    [--algorithm direct] [--size 1GiB] [--workers 1,2] [--local]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from fabricsim.collectives.whatif.dask_runner import DaskRunner
from fabricsim.cli import parse_size
from fabricsim.collectives.whatif import LocalRunner, sweep

_size = parse_size   # the CLI's: B, KiB, MiB, GiB, KB, MB, GB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="jalapeno-pod")
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--class", dest="failure_class", default="rail-switch")
    ap.add_argument("--collective", default="all-to-all")
    ap.add_argument("--group-size", type=int, default=512)
    ap.add_argument("--algorithm", default="direct")
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--local", action="store_true", help="Also time the in-process LocalRunner.")
    args = ap.parse_args(argv)
    try:
        from distributed import LocalCluster
    except ImportError:
        print("needs Dask: pip install 'fabricsim[dask]'", file=sys.stderr)
        return 2

    def run(runner):
        t0 = time.perf_counter()
        s = sweep(args.fabric, {"racks": args.racks}, args.failure_class, collective=args.collective,
                  size_bytes=_size(args.size), group_size=args.group_size, algorithm=args.algorithm, runner=runner)
        return s, time.perf_counter() - t0

    print(f"{args.collective} {args.size} on {args.fabric} racks={args.racks}, N-1 {args.failure_class}, "
          f"groups of {args.group_size}, {args.algorithm}; {os.cpu_count()} CPU(s)")
    rows, ref = [], None
    if args.local:
        s, wall = run(LocalRunner())
        ref = s.as_dict()
        print(f"  in-process LocalRunner: {len(s.scenarios)} scenarios in {wall:.2f} s")
    for w in [int(x) for x in args.workers.split(",")]:
        t0 = time.perf_counter()
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
            start = time.perf_counter() - t0
            s, wall = run(DaskRunner(cluster.scheduler_address))
        d = s.as_dict()
        same = ref is None or d == ref
        ref = d if ref is None else ref
        rows.append((w, wall, start, len(s.scenarios), s.summary["distinct"], same))
    base = rows[0][1]
    print(f"  {'workers':>7}  {'sweep s':>8}  {'start s':>7}  {'scen/s':>6}  {'speed-up':>8}  same results")
    for w, wall, start, count, _, same in rows:
        print(f"  {w:>7}  {wall:8.2f}  {start:7.2f}  {count / wall:6.2f}  {base / wall:8.2f}x  {same}")
    print(f"  {rows[0][3]} scenarios, {rows[0][4]} distinct slowdown(s)")
    return 0 if all(r[5] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
