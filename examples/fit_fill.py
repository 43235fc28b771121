"""Fit the NCCL/RCCL families' pipeline-fill pair (``[fill]`` fraction, slot_bytes) on the fitted logs only.

The pair is shared by every family that has a ``[fill]`` table.  For each point of a grid this
prices every in-place size from 128 KiB to 8 GiB of the four logs each family's launch figure
came from (``FILL_FITTED`` in ``examples/validation.py``) and reports the mean and max |busbw
error|; the pair with the least mean is the one the family files carry.  No held-out log is read.

    python examples/fit_fill.py            # ~1 min on one core
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import statistics
import sys
from pathlib import Path

from fabricsim.collectives import price
from fabricsim.collectives.cost import family as fam_mod
from fabricsim.collectives.cost.calibrate import NCCL_ALGORITHMS
from fabricsim.collectives.cost.nccl_tests import parse_log

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validation import DATA, FILL_FITTED, RANGE_BYTES, SERIES, _fabric  # noqa: E402

FRACTIONS = (0.3, 0.4, 0.5, 0.6, 0.7)
SLOTS_BYTES = (32 * 1024, 64 * 1024, 128 * 1024, 256 * 1024)


def _with_fill(fraction: float, slot_bytes: float):
    """load_family with every [fill] table's pair replaced (families without one unchanged)."""
    base = fam_mod.load_family.__wrapped__

    @functools.lru_cache(maxsize=None)
    def load(name: str):
        f = base(name)
        return dataclasses.replace(f, fill_fraction=fraction, fill_slot_bytes=slot_bytes) if f.fill_fraction else f
    return load


def cases():
    out = []
    lo, hi = RANGE_BYTES
    for key, log, fabric, *_ in SERIES:
        if key not in FILL_FITTED:
            continue
        G = _fabric(fabric)
        run = parse_log(DATA / log)[0]
        pts = [p for p in run.points if p.in_place and lo <= p.size_bytes <= hi]
        # the algorithm the log names (NCCL_ALGO), else NCCL's choice (auto), as calibrate prices it
        algo = NCCL_ALGORITHMS.get((run.algorithm or "").lower(), "auto")
        out.append((key, G, run.nranks, algo, pts))
    return out


def grid():
    cs = cases()
    rows = []
    saved = fam_mod.load_family
    try:
        for frac, slot in itertools.product(FRACTIONS, SLOTS_BYTES):
            fam_mod.load_family = _with_fill(frac, slot)
            errs = [abs(price(G, "all-reduce", groups=[tuple(range(n))], size_bytes=p.size_bytes,
                              algorithm=algo).busbw_GBps / p.busbw_GBps - 1) * 100 for _, G, n, algo, pts in cs
                    for p in pts]
            rows.append((statistics.mean(errs), max(errs), frac, slot))
    finally:
        fam_mod.load_family = saved
    return rows


def main() -> tuple:
    rows = grid()
    for mean, mx, frac, slot in rows:
        print(f"fraction {frac:.1f}  slot {slot // 1024:4d} KiB   mean |busbw err| {mean:5.2f}%   max {mx:5.1f}%")
    best = min(rows)
    print(f"least mean: fraction {best[2]:.1f}, slot {best[3] // 1024} KiB ({best[0]:.2f}%)")
    return best


if __name__ == "__main__":
    main()
