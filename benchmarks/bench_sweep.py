"""Benchmark: failure sweeps against the intact price (orbit folding), and sweep workers.

``--case orbits`` (default): issue 14's done-when rows, each as whole processes
(``python -m fabricsim.cli``) measured in one run: the intact ``price`` of a
collective, then the ``sweep --class link`` of every single-link failure of the same
collective, placement and size on the same fabric (none sampled), and their ratio
(target <= 30x).  Rows: the 2,048-chip Jalapeño pod all-to-all (21,504 links) and the
512-chip all-to-all on ``torus --set dims=8x8x8`` (1,536 links).  Prints wall time,
peak RSS of each process, the scenario and orbit counts and the distinct slowdowns.

``--case whatif``: one failed link, exact max-min (not ``--bound-only``), as whole
processes in one run: the intact ``price`` and the ``whatif --fail link:...`` of the same
all-to-all (one group of every chip, 1 GiB, ``--algorithm direct``), their ratio (target
<= 30x, <= 8 GiB RSS), and the degraded price's method (the stabilizer quotient's size).
Rows: Ironwood (16x24x24, 85M flows) and ``torus --set dims=12x12x12`` (3M flows).

``--case workers``: the N-1 rail-switch sweep on the full pod (64 scenarios) with 1 and
with 2 worker processes: wall time, speed-up, slowdowns, whether the runs are identical.

Not a test: run it by hand on a quiet machine.

    python benchmarks/bench_sweep.py [--case orbits] [--rows pod,torus] [--fold | --no-fold]
    python benchmarks/bench_sweep.py --case whatif [--rows ironwood,torus12]
    python benchmarks/bench_sweep.py --case workers [--racks 16] [--leaf switched|static]
        [--workers 1,2] [--class rail-switch] [--algorithm direct] [--size 1GiB]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from fabricsim.cli import parse_size
from fabricsim.collectives.whatif import LocalRunner, sweep

_size = parse_size   # the CLI's: B, KiB, MiB, GiB, KB, MB, GB


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# issue 14's done-when rows: (name, fabric args, collective args, sweep args)
ROWS = {
    "pod": ("pod link sweep (2,048-chip all-to-all, 21,504 links)",
            ["--fabric", "jalapeno-pod"], ["all-to-all", "--group-size", "2048", "--size", "1GiB",
                                           "--algorithm", "direct"], ["--class", "link"]),
    "torus": ("torus 8x8x8 link sweep (512-chip all-to-all, 1,536 links)",
              ["--fabric", "torus", "--set", "dims=8x8x8"], ["all-to-all", "--size", "1GiB",
                                                             "--algorithm", "direct"], ["--class", "link"]),
}


# issue 14's one-failed-link rows: (name, fabric args, the failed link)
WHATIF_ROWS = {
    "ironwood": ("Ironwood 16x24x24, one ICI link (85M flows)", ["--fabric", "ironwood"],
                 "link:c00.00.00--c01.00.00"),
    "torus12": ("torus 12x12x12, one link (3M flows)", ["--fabric", "torus", "--set", "dims=12x12x12"],
                "link:c00.00.00--c01.00.00"),
    "torus8": ("torus 8x8x8, one link (261k flows)", ["--fabric", "torus", "--set", "dims=8x8x8"],
               "link:c00.00.00--c01.00.00"),
}
WHATIF_COLL = ["all-to-all", "--size", "1GiB", "--algorithm", "direct"]


def whatif_case(rows: list[str]) -> int:
    print(f"{'row':<46} {'price s':>8} {'whatif s':>8} {'ratio':>7} {'RSS GiB':>8} {'path':>11} {'classes':>11} "
          f"{'flows':>11} {'slowdown':>9}", flush=True)
    for key in rows:
        name, fab, spec = WHATIF_ROWS[key]
        with tempfile.TemporaryDirectory() as tmp:
            t_price, rss_p = _process(["price", WHATIF_COLL[0], *fab, *WHATIF_COLL[1:]])
            path = os.path.join(tmp, "whatif.json")
            t_w, rss_w = _process(["whatif", WHATIF_COLL[0], *fab, *WHATIF_COLL[1:], "--fail", spec, "--json"], path)
            with open(path) as fh:
                js = json.load(fh)
        m = js["method"]["degraded"]
        print(f"{name:<46} {t_price:8.2f} {t_w:8.2f} {t_w / t_price:6.1f}x {max(rss_p, rss_w):8.2f} "
              f"{m['path']:>11} {m['quotient_size']:>11,} {m['flows']:>11,} {js['slowdown']:9.5f}", flush=True)
    print("target (issue 14): whatif <= 30x the intact price, <= 8 GiB RSS (whatif includes its baseline price)")
    return 0


def _process(args: list[str], out_path: str | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (GiB) of ``python -m fabricsim.cli ARGS`` (stdout to a file or dropped)."""
    out = open(out_path, "w") if out_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", *args], stdout=out, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if out_path:
        out.close()
    if p.returncode:
        raise SystemExit(f"fabricsim {' '.join(args)} exited {p.returncode}")
    return wall, ru.ru_maxrss / 2 ** 20


def orbits_case(rows: list[str], fold: bool) -> int:
    print(f"{'row':<58} {'price s':>8} {'sweep s':>8} {'ratio':>7} {'RSS GiB':>8} {'scenarios':>10} "
          f"{'orbits':>7} {'distinct':>8}", flush=True)
    for key in rows:
        name, fab, coll, sw = ROWS[key]
        with tempfile.TemporaryDirectory() as tmp:
            t_price, rss_p = _process(["price", coll[0], *fab, *coll[1:]])
            path = os.path.join(tmp, "sweep.json")
            t_sweep, rss_s = _process(["sweep", coll[0], *fab, *coll[1:], *sw, "--json"]
                                      + ([] if fold else ["--no-fold"]), path)
            with open(path) as fh:
                sm = json.load(fh)["summary"]
        print(f"{name:<58} {t_price:8.2f} {t_sweep:8.2f} {t_sweep / t_price:6.1f}x {max(rss_p, rss_s):8.2f} "
              f"{sm['count']:>10,} {sm.get('orbits', sm['count']):>7,} {sm['distinct']:>8}", flush=True)
    print("target (issue 14): each sweep <= 30x its intact price, every scenario (none sampled)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--case", choices=("orbits", "whatif", "workers"), default="orbits",
                    help="orbits: the sweep done-when rows as whole processes; whatif: one failed link, exact; "
                         "workers: 1 vs 2 worker processes")
    ap.add_argument("--rows", default=None, help=f"orbits rows, comma-separated from {', '.join(ROWS)} (default "
                    f"pod,torus); whatif rows from {', '.join(WHATIF_ROWS)} (default ironwood,torus12)")
    ap.add_argument("--fold", action=argparse.BooleanOptionalAction, default=True,
                    help="orbits: fold scenarios into orbits (--no-fold prices every scenario: hours)")
    ap.add_argument("--racks", type=int, default=16)
    ap.add_argument("--leaf", default="switched", choices=("switched", "static"))
    ap.add_argument("--rail-wiring", default="per-lane", choices=("per-lane", "per-port"))
    ap.add_argument("--class", dest="cls", default="rail-switch")
    ap.add_argument("--workers", default="1,2", help="worker counts to time, comma-separated")
    ap.add_argument("--algorithm", default="direct", help="direct is what auto picks for this case")
    ap.add_argument("--size", default="1GiB")
    args = ap.parse_args(argv)
    if args.case in ("orbits", "whatif"):
        table = ROWS if args.case == "orbits" else WHATIF_ROWS
        given = args.rows or ("pod,torus" if args.case == "orbits" else "ironwood,torus12")
        rows = [r.strip() for r in given.split(",") if r.strip()]
        bad = [r for r in rows if r not in table]
        if bad:
            ap.error(f"unknown row(s) {', '.join(bad)}; choose from {', '.join(table)}")
        return orbits_case(rows, args.fold) if args.case == "orbits" else whatif_case(rows)
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
