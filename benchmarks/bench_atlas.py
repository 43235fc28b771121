"""Benchmark: ``fabricsim atlas`` (every failure class N-1) and issue 24's speed rows, as whole processes.

``--case atlas`` (default): issue 24's done-when rows, each a whole process
(``python -m fabricsim.cli atlas ... --json``) measured in one run: wall time, CPU time (user +
system of the child and its workers), peak RSS (the largest process), and per class the
scenarios, orbits, worst slowdown and seconds, or why the class was not run (the atlas's
``--budget-s`` / ``--max-orbits`` bounds).  Target: each row <= 60 s.

Rows:
  pod       atlas jalapeno-pod --collective all-to-all --group-size 2048 --size 1GiB
  ironwood  atlas ironwood --collective all-to-all --size 1GiB

``--case speed``: issue 24 item 6, pairs of processes measured one after the other in one run,
with their ratio:
  boardfly  price all-to-all --fabric boardfly --group-size 64 --size 1GiB, against the same on
            nvl72 --group-size 64 --count 1 (target: within ~3x)
  ocs       whatif all-to-all --fabric ironwood --fail ocs:3 --size 1GiB (exact, auto algorithm),
            against price all-to-all --fabric ironwood --size 1GiB (target: within 30x)
  n2        sweep all-to-all --fabric tpu8t --class ocs --n 2 and --fabric groq-lpx --class tray
            --n 2 (--size 1GiB): how long until each runs, or refuses with its estimate (exit 2)

Not a test: run it by hand on a quiet machine.

    python benchmarks/bench_atlas.py [--rows pod,ironwood] [--budget-s 120] [--workers 1]
    python benchmarks/bench_atlas.py --case speed [--rows boardfly,ocs,n2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROWS = {
    "pod": ("jalapeno-pod all-to-all, 2,048 chips, 1 GiB",
            ["jalapeno-pod", "--collective", "all-to-all", "--group-size", "2048", "--size", "1GiB"]),
    "ironwood": ("ironwood all-to-all, 9,216 chips, 1 GiB",
                 ["ironwood", "--collective", "all-to-all", "--size", "1GiB"]),
}


def _process(args: list[str], out_path: str | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (GiB) of ``python -m fabricsim.cli ARGS``.

    ``wait4``'s usage counts the child and the worker processes it reaped (CPU summed, RSS
    the largest)."""
    out = open(out_path, "w") if out_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", *args], stdout=out, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if out_path:
        out.close()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"fabricsim {' '.join(args)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 2 ** 20


# issue 24 item 6: (name, the slow process, the reference process, target ratio)
SPEED = {
    "boardfly": ("boardfly 64-chip all-to-all price vs nvl72 64 chips (--count 1)",
                 ["price", "all-to-all", "--fabric", "boardfly", "--group-size", "64", "--size", "1GiB"],
                 ["price", "all-to-all", "--fabric", "nvl72", "--group-size", "64", "--count", "1", "--size", "1GiB"],
                 3.0),
    "ocs": ("ironwood whatif --fail ocs:3 (exact, auto) vs the intact price",
            ["whatif", "all-to-all", "--fabric", "ironwood", "--fail", "ocs:3", "--size", "1GiB"],
            ["price", "all-to-all", "--fabric", "ironwood", "--size", "1GiB"], 30.0),
}
N2 = {
    "tpu8t ocs N-2": ["sweep", "all-to-all", "--fabric", "tpu8t", "--class", "ocs", "--n", "2", "--size", "1GiB"],
    "groq-lpx tray N-2": ["sweep", "all-to-all", "--fabric", "groq-lpx", "--class", "tray", "--n", "2", "--size",
                          "1GiB"],
}


def speed_case(rows: list[str]) -> int:
    load = os.getloadavg()[0]
    print(f"load average before: {load:.2f}", flush=True)
    for key in rows:
        if key == "n2":
            for name, args in N2.items():
                with tempfile.TemporaryDirectory() as tmp:
                    err = os.path.join(tmp, "err")
                    t0 = time.perf_counter()
                    with open(err, "w") as fe:
                        p = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", *args, "--json"],
                                             stdout=subprocess.DEVNULL, stderr=fe)
                        _, status, ru = os.wait4(p.pid, 0)
                    wall = time.perf_counter() - t0
                    with open(err) as fh:
                        last = [ln for ln in fh.read().splitlines() if ln.startswith("Error")][-1:] or [""]
                code = os.waitstatus_to_exitcode(status)
                cpu = ru.ru_utime + ru.ru_stime
                what = "ran" if code == 0 else f"refused (exit {code}): {last[0][:200]}"
                print(f"{name}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {ru.ru_maxrss / 2 ** 20:.2f} GiB; "
                      f"{what}", flush=True)
            continue
        name, slow, ref, target = SPEED[key]
        w1, c1, r1 = _process(slow)
        w0, c0, r0 = _process(ref)
        print(f"{name}: {w1:.1f} s wall, {c1:.1f} s CPU, {r1:.2f} GiB vs {w0:.1f} s wall, {c0:.1f} s CPU, "
              f"{r0:.2f} GiB: ratio {w1 / w0:.1f}x wall, {c1 / max(c0, 1e-9):.1f}x CPU (target <= {target:g}x)"
              f"{'' if w1 / w0 <= target else '  OVER'}", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("atlas", "speed"), default="atlas")
    ap.add_argument("--rows", default=None, help=f"atlas: comma-separated from {', '.join(ROWS)} (default: all); "
                    f"speed: from {', '.join(SPEED)}, n2 (default: all)")
    ap.add_argument("--budget-s", default=None, help="passed to atlas --budget-s (default: the atlas's)")
    ap.add_argument("--workers", default=None, help="passed to atlas --workers (default: the atlas's own, this machine's cores up to 4)")
    a = ap.parse_args(argv)
    if a.case == "speed":
        return speed_case((a.rows or ",".join([*SPEED, "n2"])).split(","))
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    for key in (a.rows or ",".join(ROWS)).split(","):
        name, args = ROWS[key]
        extra = (["--budget-s", a.budget_s] if a.budget_s else []) + (["--workers", a.workers] if a.workers else [])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "atlas.json")
            wall, cpu, rss = _process(["atlas", *args, *extra, "--json"], path)
            with open(path) as fh:
                js = json.load(fh)
        print(f"{name}{f' ({a.workers} workers)' if a.workers else ' (default workers)'}: wall {wall:.1f} s, CPU {cpu:.1f} s, "
              f"peak RSS {rss:.2f} GiB "
              f"(target <= 60 s){'' if wall <= 60 else '  OVER'}", flush=True)
        print(f"  {'class':<13} {'scenarios':>9} {'orbits':>6} {'worst':>9} {'s':>6}  note")
        for c in sorted(js["classes"], key=lambda c: -c["seconds"]):
            worst = "n/a" if c["worst_slowdown"] is None else f"x{c['worst_slowdown']:.5g}"
            note = f"not run: {c['skipped']}" if c["skipped"] else (
                f"{c['unpriced']:,} priced nothing" if c["unpriced"] else "")
            print(f"  {c['class']:<13} {c['scenarios']:>9,} {c['orbits'] or 0:>6,} {worst:>9} "
                  f"{c['seconds']:6.1f}  {note}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
