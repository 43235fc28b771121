"""The seeds' fabric table, computed from the catalog: Jalapeño against NVL72, Helios, Maia 200,
Groq 3 LPX, TPU 7 Ironwood, TPU 8t (superpod and Virgo), TPU 8i Boardfly and the MI355X node.

Per fabric (its catalog defaults): chips, per-chip scale-up bandwidth (per direction, and the
bidirectional figure vendors quote), hop diameter between chips, bisection bandwidth per chip
(the audit's minimum cut over the chips of one half), and the busbw of one 64-chip group
(packed placement; on a 3D torus the 4x4x4 cube at the origin, as a TPU slice of 64 chips is
a cube; the rest of the fabric idle, S = 1 GiB): all-reduce by the cheapest
algorithm that applies (``auto``) and all-to-all by ``direct``.  The MI355X node has 8 chips,
so no 64-chip group; on Virgo a 64-chip job stays inside one superpod's ICI torus (the
``tpu8t`` row), and Virgo's hop statistics over 134,400^2 pairs are skipped.

    python examples/seed_table.py [OUTDIR]      # writes OUTDIR/seed_table.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives import by_size, price
from fabricsim.fabrics import build
from fabricsim.topo.auditing import bisection, chip_bandwidth, hop_stats

ROWS = [("Jalapeño rack", "jalapeno-rack", {}), ("Jalapeño pod", "jalapeno-pod", {}),
        ("NVL72 GB200", "nvl72", {}), ("NVL72 Vera Rubin", "nvl72", {"generation": "vera-rubin"}),
        ("AMD Helios", "helios", {}), ("Maia 200", "maia200", {}), ("Groq 3 LPX", "groq-lpx", {}),
        ("TPU7x Ironwood", "ironwood", {}), ("TPU 8t superpod", "tpu8t", {}),
        ("TPU 8t Virgo", "tpu8t-virgo", {}), ("TPU 8i Boardfly", "boardfly", {}),
        ("MI355X node", "mi355x", {})]
GROUP = 64
SIZE = 2 ** 30
NO_HOPS = {"tpu8t-virgo"}        # 1.8e10 chip pairs
NO_GROUP = {"tpu8t-virgo"}       # a 64-chip job runs on the superpod's ICI (see tpu8t)


def group_of(G) -> list[list[int]]:
    """One 64-chip group: the 4x4x4 cube at the origin of a 3D torus, else the first 64 ranks."""
    dims = [int(k) for k in str(G.graph.get("dims", "")).split("x") if k]
    if len(dims) == 3 and min(dims) >= 4:
        cube = sorted(d["rank"] for _, d in G.nodes(data=True)
                      if d["kind"] == "chip" and max(d["x"], d["y"], d["z"]) < 4)
        return [cube]
    return by_size(G, GROUP, "packed", count=1)


def row(label: str, name: str, params: dict) -> dict:
    G = build(name, **params)
    n = sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    bw = chip_bandwidth(G)
    out = {"label": label, "fabric": name, "params": params, "chips": n,
           "chip_GBps": bw["chip_bandwidth_GBps"], "chip_bidir_TBps": bw["chip_bandwidth_bidir_TBps"],
           "diameter": None if name in NO_HOPS else hop_stats(G).diameter_hops,
           "bisection_per_chip_GBps": bisection(G).GBps / (n // 2), "ar": None, "a2a": None,
           "inferred": bool(G.graph.get("inferred"))}
    if n >= GROUP and name not in NO_GROUP:
        g = group_of(G)
        out["ar"] = price(G, "all-reduce", groups=g, size_bytes=SIZE)
        out["a2a"] = price(G, "all-to-all", groups=g, size_bytes=SIZE, algorithm="direct")
    return out


def results() -> list[dict]:
    return [row(*r) for r in ROWS]


def _f(v, fmt) -> str:
    return "—" if v is None else format(v, fmt)


def print_table(rows: list[dict]) -> None:
    print(f"{'fabric':<17} {'chips':>8} {'GB/s/dir':>9} {'TB/s bidir':>10} {'diameter':>8} "
          f"{'bisect/chip':>11} {'AR64 busbw':>10} {'algorithm':>16} {'A2A64 busbw':>11}")
    for r in rows:
        print(f"{r['label'] + (' *' if r['inferred'] else ''):<17} {r['chips']:>8,} {r['chip_GBps']:>9,.1f} "
              f"{r['chip_bidir_TBps']:>10.3f} {_f(r['diameter'], 'd'):>8} {r['bisection_per_chip_GBps']:>11,.1f} "
              f"{_f(r['ar'] and r['ar'].busbw_GBps, ',.1f'):>10} {(r['ar'].algorithm if r['ar'] else '—'):>16} "
              f"{_f(r['a2a'] and r['a2a'].busbw_GBps, ',.1f'):>11}")
    print(f"\nGB/s per direction (1e9 B/s); bisection per chip = the minimum cut found between two halves / "
          f"(chips / 2); busbw of one {GROUP}-chip group at S = {SIZE // 2**30} GiB (nccl-tests definitions).")
    print("* some wiring or figures inferred (fabricsim list / audit FABRIC say which); the MI355X node has "
          "8 chips (no 64-chip group); Virgo: a 64-chip job stays on a superpod's ICI (the TPU 8t row), hops "
          "over 134,400^2 pairs skipped.")


def figure(rows: list[dict], path: Path) -> Path:
    labels = [r["label"] for r in rows]
    y = np.arange(len(rows))
    fig = Figure(figsize=(12, 6.5))
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    h = 0.38
    ax1.barh(y - h / 2, [r["chip_GBps"] for r in rows], h, color="#4c78a8", label="per-chip scale-up")
    ax1.barh(y + h / 2, [r["bisection_per_chip_GBps"] for r in rows], h, color="#f58518",
             label="bisection per chip")
    ax1.set_xscale("log")
    ax1.set_xlabel("GB/s per direction")
    ax1.set_title("Bandwidth per chip")
    ax1.legend(loc="lower right", fontsize=8)
    ar = [r["ar"].busbw_GBps if r["ar"] else 0.0 for r in rows]
    a2a = [r["a2a"].busbw_GBps if r["a2a"] else 0.0 for r in rows]
    ax2.barh(y - h / 2, ar, h, color="#54a24b", label="all-reduce (auto)")
    ax2.barh(y + h / 2, a2a, h, color="#e45756", label="all-to-all (direct)")
    for i, r in enumerate(rows):
        if r["ar"] is None:
            ax2.text(1.0, i, "no 64-chip group" if r["chips"] < GROUP else "64 chips: see superpod",
                     va="center", fontsize=8, color="#666666")
    ax2.set_xlabel(f"busbw GB/s, one {GROUP}-chip group, S = 1 GiB")
    ax2.set_title("64-chip collectives")
    ax2.legend(loc="lower right", fontsize=8)
    ax1.set_yticks(y, labels)
    ax1.invert_yaxis()
    for ax in (ax1, ax2):
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("The seeds' fabrics from the fabricsim catalog (defaults; * rows have inferred wiring)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("out")
    rows = results()
    print_table(rows)
    path = figure(rows, out / "seed_table.png")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
