"""Benchmark: ``fabricsim design`` on a space of >= 5,000 designs, as one process.

Issue 28's done-when row: a space of at least 5,000 designs finishes in <= 10 minutes on
this 2-core machine, pruning stated.  Each row runs ``python -m fabricsim.cli design SPACE
--json --workers W --search S`` and prints wall and CPU time, peak RSS, designs evaluated
of the space, priced, pruned, refused, the front's size and the mean seconds per priced
design.  Rows: ``nsga2`` (500 evaluations, the default for a space this size) and
``exhaustive`` with ``--budget-s 600`` (how much of the space exact pruning gets through in
the 10 minutes).

Not a test: run it by hand on a quiet machine.

    python benchmarks/bench_design.py [--space examples/design/rail_cluster_large.toml] [--workers 2]
                                      [--rows nsga2,exhaustive]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", default=str(HERE / "examples" / "design" / "rail_cluster_large.toml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", default="nsga2,exhaustive")
    a = ap.parse_args()
    print(f"space {a.space}")
    for row in a.rows.split(","):
        extra = ["--search", "nsga2", "--evaluations", "500"] if row == "nsga2" else \
            ["--search", "exhaustive", "--budget-s", "600"]
        _row(row, [sys.executable, "-m", "fabricsim.cli", "design", a.space, "--json", "--workers",
                   str(a.workers), *extra])


def _row(name: str, args: list[str]) -> None:
    with tempfile.NamedTemporaryFile("w+", suffix=".json") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(args, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        doc = json.load(out) if status == 0 else None
    if doc is None:
        print(f"{name}: design failed (status {status})")
        return
    priced = [q for q in doc["all"] if q["status"] in ("ok", "infeasible")]
    per = sum(q["seconds"] for q in priced) / max(1, len(priced))
    print(f"{name}: {doc['method']}, {doc['designs']:,} of {doc['space_designs']:,} designs evaluated "
          f"({'complete' if doc['complete'] else 'stopped at the budget'}): priced {doc['evaluated']:,}  "
          f"pruned {doc['pruned']:,}  refused {doc['refused']:,}  front {len(doc['pareto'])}")
    print(f"  wall {wall:.1f} s  CPU {ru.ru_utime + ru.ru_stime:.1f} s (parent)  peak RSS "
          f"{ru.ru_maxrss / 2**20:.2f} GiB  mean {per * 1e3:.0f} ms per priced design (in a worker)  "
          f"target <= 600 s: {'met' if wall <= 600 else 'NOT met'}")


if __name__ == "__main__":
    main()
