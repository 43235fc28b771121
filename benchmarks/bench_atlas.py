"""Benchmark: ``fabricsim atlas`` (every failure class N-1) as whole processes, per class.

Issue 24's done-when rows, each a whole process (``python -m fabricsim.cli atlas ... --json``)
measured in one run: wall time, CPU time (user + system of the child), peak RSS, and per class
the scenarios, orbits, worst slowdown and seconds, or why the class was not run (the atlas's
``--budget-s`` / ``--max-orbits`` bounds).  Target: each row <= 60 s.

Rows:
  pod       atlas jalapeno-pod --collective all-to-all --group-size 2048 --size 1GiB
  ironwood  atlas ironwood --collective all-to-all --size 1GiB

Not a test: run it by hand on a quiet machine.

    python benchmarks/bench_atlas.py [--rows pod,ironwood] [--budget-s 120]
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


def _process(args: list[str], out_path: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (GiB) of ``python -m fabricsim.cli ARGS``."""
    with open(out_path, "w") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", *args], stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"fabricsim {' '.join(args)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 2 ** 20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="pod,ironwood", help=f"comma-separated from {', '.join(ROWS)}")
    ap.add_argument("--budget-s", default=None, help="passed to atlas --budget-s (default: the atlas's)")
    a = ap.parse_args(argv)
    for key in a.rows.split(","):
        name, args = ROWS[key]
        extra = ["--budget-s", a.budget_s] if a.budget_s else []
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "atlas.json")
            wall, cpu, rss = _process(["atlas", *args, *extra, "--json"], path)
            with open(path) as fh:
                js = json.load(fh)
        print(f"{name}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:.2f} GiB "
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
