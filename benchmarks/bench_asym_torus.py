"""Benchmark issue 14's heterogeneous-capacity row: an 8x8x8 torus all-to-all whose link
bandwidths are drawn at random, priced exactly (flow-level max-min), against the uniform torus.

Both are whole ``fabricsim price`` processes measured in one run (best of ``--repeat``):

* uniform: ``price all-to-all --fabric torus --set dims=8x8x8 --size 1GiB`` (translation classes);
* random:  the same torus written by ``fabricsim export`` and edited: every link's lane rate
  drawn uniformly from [0.5, 1.5] x the raw 200 Gb/s (seeded), which leaves no symmetry, so
  every flow is routed and solved.

    python benchmarks/bench_asym_torus.py [--dims 8x8x8] [--seed 0] [--repeat 2]

Target (issue 14): the random torus <= 30x the uniform price, exact (not --bound-only).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _cli(*args: str) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fabricsim.cli", *args, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode:
        raise SystemExit(f"fabricsim {' '.join(args)}: {out.stderr.strip().splitlines()[-1]}")
    return wall, json.loads(out.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_asym_torus.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="8x8x8", help="torus shape (default 8x8x8)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random lane rates")
    ap.add_argument("--repeat", type=int, default=2, help="runs per side; the best counts")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "torus-random.json"
        subprocess.run([sys.executable, "-m", "fabricsim.cli", "export", "torus", "--set", f"dims={args.dims}",
                        "-o", str(path)], check=True, capture_output=True)
        d = json.loads(path.read_text())
        rng = np.random.default_rng(args.seed)
        for e in d["edges"]:
            e["lane_gbps"] = round(float(e["lane_gbps"]) * rng.uniform(0.5, 1.5), 3)
            e["port_gbps"] = e["capacity_gbps"] = e["lane_gbps"] * e["lanes"]
        d["graph"]["name"] = "torus-random"
        path.write_text(json.dumps(d))
        common = ["price", "all-to-all", "--size", "1GiB", "--algorithm", "direct"]
        best = {"uniform": np.inf, "random": np.inf}
        rep = {}
        for _ in range(args.repeat):
            for label, fab in (("uniform", ["--fabric", "torus", "--set", f"dims={args.dims}"]),
                               ("random", ["--fabric", str(path)])):
                wall, r = _cli(*common, *fab)
                best[label] = min(best[label], wall)
                rep[label] = r
    print(f"{'case':<10}{'process s':>10}{'time us':>14}  mode / method")
    for label in ("uniform", "random"):
        r = rep[label]
        print(f"{label:<10}{best[label]:>10.2f}{r['time_s'] * 1e6:>14,.1f}  {r['mode']} / "
              f"{(r.get('method') or {}).get('path', '?')}")
    ratio = best["random"] / best["uniform"]
    print(f"\nrandom / uniform = {ratio:.1f}x (target <= 30x): {'OK' if ratio <= 30 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
