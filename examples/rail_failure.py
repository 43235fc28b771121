"""One rail switch (and one whole rail) down on the Jalapeño pod, under both wiring readings
and both leaf models: the article's failure table and what changes.

The article's table (seed 003 §3.4, FACTS §1) assumes the in-rack global ASICs patch each
chip lane to a fixed rail switch (``leaf=static``):

* reading A (``per-lane``: one 200G lane to each rail): 256 chips keep 175 of 200 GB/s;
* reading B (``per-port``: the whole 1.6T port to one rail): 256 chips lose all global bandwidth.

The model counts the chips on the full 2,048-chip pod (:func:`chip_tier_bandwidth` after
:func:`apply_failures`) and prices an all-to-all over every chip of a 4-rack slice
(:func:`whatif`, S = 64 MiB per rank; the slowdown does not depend on the rack count).

    python examples/rail_failure.py [OUTDIR]      # writes OUTDIR/rail_failure.png
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives import by_size
from fabricsim.collectives.whatif import whatif
from fabricsim.fabrics import build
from fabricsim.topo.failures import apply_failures, chip_tier_bandwidth

FAILURES = ("rail-switch:rail0/sw0", "rail:0")
CONFIGS = (("per-lane", "static"), ("per-port", "static"), ("per-lane", "switched"), ("per-port", "switched"))
READING = {"per-lane": "A", "per-port": "B"}
# the article's table: one rail switch down, static patching (seed 003 §3.4, FACTS §1)
ARTICLE = {("per-lane", "static"): "256 chips at 175 GB/s", ("per-port", "static"): "256 chips at 0 GB/s"}
SLICE_RACKS = 4
SIZE = 64 * 2 ** 20


def chip_counts(wiring: str, leaf: str, spec: str) -> Counter:
    """Full pod: how many chips end at each global GB/s (0 = cut off the global tier)."""
    G = build("jalapeno-pod", leaf=leaf, rail_wiring=wiring)
    tb = chip_tier_bandwidth(apply_failures(G, [spec])[0])
    return Counter(v.get("global", 0.0) for v in tb.values())


def results() -> list[dict]:
    rows = []
    for wiring, leaf in CONFIGS:
        G = build("jalapeno-pod", racks=SLICE_RACKS, leaf=leaf, rail_wiring=wiring)
        groups = by_size(G, 128 * SLICE_RACKS)
        base = None
        for spec in FAILURES:
            w = whatif(G, [spec], "all-to-all", groups=groups, size_bytes=SIZE, algorithm="direct", baseline=base)
            base = w.baseline
            counts = chip_counts(wiring, leaf, spec)
            rows.append({"wiring": wiring, "leaf": leaf, "spec": spec, "whatif": w, "counts": counts,
                         "reduced": sum(c for v, c in counts.items() if 0 < v < 200.0),
                         "cut": counts.get(0.0, 0)})
    return rows


def _after(counts: Counter) -> str:
    return ", ".join(f"{c:,} at {v:g}" for v, c in sorted(counts.items(), key=lambda kv: -kv[0]))


def print_table(rows) -> None:
    head = (f"{'wiring':<12} {'leaf':<9} {'failure':<22} {'chips hit':>9}  {'global GB/s per chip after (pod)':<32} "
            f"{'bw slowdown':>11} {'slowdown':>9}  article")
    print(head)
    print("-" * len(head))
    for r in rows:
        w = r["whatif"]
        hit = r["reduced"] + r["cut"]
        art = ARTICLE.get((r["wiring"], r["leaf"]), "-") if r["spec"].startswith("rail-switch") else "-"
        print(f"{r['wiring'] + ' (' + READING[r['wiring']] + ')':<12} {r['leaf']:<9} {r['spec']:<22} {hit:>9,}  "
              f"{_after(r['counts']):<32} {w.bandwidth_slowdown:>10.4f}x {w.slowdown:>8.4f}x  {art}"
              + ("  PARTIAL" if w.partial else ""))
    print(f"\nchips hit: on the full 2,048-chip pod; slowdowns: all-to-all of {SIZE / 2**20:g} MiB per rank over "
          f"every chip of a {SLICE_RACKS}-rack slice (direct), bandwidth part and total")


def figure(rows, path: Path) -> Path:
    fig = Figure(figsize=(12.5, 5.0), dpi=110)
    a, b = fig.subplots(1, 2)
    labels = [f"{w} ({READING[w]})\n{leaf}" for w, leaf in CONFIGS]
    x = np.arange(len(CONFIGS))
    width = 0.38
    colors = {FAILURES[0]: "#4c78a8", FAILURES[1]: "#e45756"}
    for i, spec in enumerate(FAILURES):
        rs = [next(r for r in rows if (r["wiring"], r["leaf"]) == c and r["spec"] == spec) for c in CONFIGS]
        vals = [r["whatif"].bandwidth_slowdown for r in rs]
        a.bar(x + (i - 0.5) * width, vals, width, color=colors[spec], label=spec)
        for xi, v in zip(x + (i - 0.5) * width, vals):
            a.text(xi, v, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
        reduced = [r["reduced"] for r in rs]
        cut = [r["cut"] for r in rs]
        b.bar(x + (i - 0.5) * width, reduced, width, color=colors[spec], alpha=0.55,
              label=f"{spec}: global bandwidth reduced")
        b.bar(x + (i - 0.5) * width, cut, width, bottom=reduced, color=colors[spec], hatch="///",
              edgecolor="white", label=f"{spec}: cut off the global tier")
        for xi, r0, c0 in zip(x + (i - 0.5) * width, reduced, cut):
            b.text(xi, r0 + c0, f"{r0 + c0:,}", ha="center", va="bottom", fontsize=8)
    for j, c in enumerate(CONFIGS):
        if c in ARTICLE:
            b.plot([j - width - 0.27], [256], marker="*", color="black", ms=11, ls="")
    b.plot([], [], marker="*", color="black", ms=9, ls="", label="the article's table: 256 chips")
    a.axhline(1.0, color="#888888", lw=0.8)
    a.set_ylabel("all-to-all bandwidth slowdown (x)")
    a.set_ylim(0.9, max(r["whatif"].bandwidth_slowdown for r in rows) * 1.12)
    a.set_title(f"all-to-all over {128 * SLICE_RACKS} chips, S = {SIZE / 2**20:g} MiB per rank", fontsize=10)
    a.legend(fontsize=8, frameon=False, loc="upper left")
    b.set_ylabel("chips hit on the 2,048-chip pod")
    b.set_yscale("symlog", linthresh=100)
    b.set_ylim(0, 2048 * 4)
    b.set_yticks([0, 32, 100, 256, 1000, 2048], ["0", "32", "100", "256", "1,000", "2,048"])
    b.set_title("chips whose global bandwidth changes", fontsize=10)
    b.legend(fontsize=7, frameon=False, loc="upper left", ncol=2)
    for ax in (a, b):
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_xlabel("rail wiring (reading) / in-rack global ASIC model")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("One rail switch or one rail down on the Jalapeño pod: the article's table under both readings "
                 "and both leaf models", fontsize=11)
    fig.subplots_adjust(wspace=0.22, left=0.07, right=0.98, top=0.86, bottom=0.16)
    fig.savefig(path, facecolor="white")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    rows = results()
    print("Rail failures on jalapeno-pod (fabricsim.topo.failures, fabricsim.collectives.whatif)\n")
    print_table(rows)
    path = figure(rows, out / "rail_failure.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
