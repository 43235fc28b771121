"""EP width against all-to-all time on the Jalapeño pod: where the 3:1 split bites.

Every rank of the 2,048-chip pod is in one EP group of width 8 ... 2,048 (packed: a
group of 256 spans 2 racks), all groups at once, S = 64 MiB per rank (nccl-tests'
all-to-all size).  Flat = direct all-to-all; hierarchical = rail-aligned (inside the
rack first, then across racks between chips of the same position only).  Up to 128
the group sits in one rack and rides the 600 GB/s local tier (586 GB/s delivered: the
Ethernet family's efficiency 0.977, as every price uses the default step model); beyond,
the share (n - 128)/n of every rank's bytes crosses racks on the 200 GB/s global tier.

    python examples/ep_width.py [OUTDIR]      # writes OUTDIR/ep_width.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives import by_size, price
from fabricsim.fabrics import build
from fabricsim.topo.failures import chip_tier_bandwidth

WIDTHS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
SIZE = 64 * 2 ** 20


def results(G) -> list[dict]:
    rack = 128
    out = []
    for n in WIDTHS:
        groups = by_size(G, n)
        row = {"width": n, "racks": max(1, n // rack), "cross": max(0, n - rack) / n}
        for alg in ("direct", "hierarchical"):
            if alg == "hierarchical" and n <= rack:
                continue            # one rack: nothing to align
            r = price(G, "all-to-all", groups=groups, size_bytes=SIZE, algorithm=alg)
            row[alg] = r
        out.append(row)
    return out


def print_table(rows, local_GBps, global_GBps) -> None:
    print(f"{'EP':>5}  {'racks':>5}  {'cross':>6}  {'flat us':>9}  {'(bw us)':>9}  {'hier us':>9}  "
          f"{'(bw us)':>9}  {'best':>6}  {'GB/s/rank':>9}  {'global bound us':>15}")
    for row in rows:
        d, h = row["direct"], row.get("hierarchical")
        best = d if h is None or d.time_s <= h.time_s else h
        # per-rank rate of the bytes that leave the chip, over the flat bandwidth time
        rate = SIZE * (row["width"] - 1) / row["width"] / d.bandwidth_time_s / 1e9
        bound = SIZE * row["cross"] / (global_GBps * 1e9)
        print(f"{row['width']:>5}  {row['racks']:>5}  {row['cross']:>6.3f}  {d.time_s * 1e6:>9.1f}  "
              f"{d.bandwidth_time_s * 1e6:>9.1f}  "
              + (f"{h.time_s * 1e6:>9.1f}  {h.bandwidth_time_s * 1e6:>9.1f}  " if h else f"{'-':>9}  {'-':>9}  ")
              + f"{'flat' if best is d else 'hier':>6}  {rate:>9.1f}  {bound * 1e6:>15.1f}")
    print(f"\nchip bandwidth per direction: local {local_GBps:g} GB/s, global {global_GBps:g} GB/s "
          f"({local_GBps / global_GBps:g}:1); S = {SIZE / 2**20:g} MiB per rank")


def figure(rows, local_GBps, global_GBps, path: Path) -> Path:
    w = np.array([r["width"] for r in rows])
    fig = Figure(figsize=(12.5, 4.8), dpi=110)
    a, b = fig.subplots(1, 2)
    d_t = np.array([r["direct"].time_s for r in rows]) * 1e6
    d_bw = np.array([r["direct"].bandwidth_time_s for r in rows]) * 1e6
    hw = np.array([r["width"] for r in rows if "hierarchical" in r])
    h_t = np.array([r["hierarchical"].time_s for r in rows if "hierarchical" in r]) * 1e6
    h_bw = np.array([r["hierarchical"].bandwidth_time_s for r in rows if "hierarchical" in r]) * 1e6
    bound = np.array([SIZE * r["cross"] / (global_GBps * 1e9) for r in rows]) * 1e6
    a.plot(w, d_t, "o-", color="#4c78a8", label="flat (direct): total")
    a.plot(w, d_bw, "o--", color="#4c78a8", alpha=0.6, label="flat: bandwidth part")
    a.plot(hw, h_t, "s-", color="#f58518", label="hierarchical (rail-aligned): total")
    a.plot(hw, h_bw, "s--", color="#f58518", alpha=0.6, label="hierarchical: bandwidth part")
    a.plot(w[w > 128], bound[w > 128], ":", color="black", label="cross-rack bytes / 200 GB/s")
    a.set_ylabel("all-to-all time (us)")
    a.set_title(f"all-to-all of {SIZE / 2**20:g} MiB per rank, every rank in a group", fontsize=10)
    a.legend(fontsize=8, frameon=False, loc="upper left")
    # effective rate of each rank's outgoing bytes over the flat bandwidth time, and the
    # rate the two tiers allow: local bytes at 600 and cross-rack bytes at 200 GB/s at once
    rate = SIZE * (w - 1) / w / (d_bw * 1e-6) / 1e9
    cross = np.array([r["cross"] for r in rows])
    ideal = (w - 1) / w / np.maximum(cross / global_GBps, (1 - cross - 1 / w) / local_GBps)
    b.plot(w, ideal, "-", color="#bbbbbb", lw=4, label="tiers' limit: (n-1)/n / max(cross/200, local/600)")
    b.plot(w, rate, "o-", color="#54a24b", label="fabricsim flat: bytes sent per rank / bandwidth time")
    b.axhline(local_GBps, color="#4c78a8", ls="--", lw=1)
    b.text(w.max(), local_GBps, f"local tier {local_GBps:g} GB/s", ha="right", va="bottom", fontsize=8,
           color="#4c78a8")
    b.axhline(global_GBps, color="#f58518", ls="--", lw=1)
    b.text(9, global_GBps, f"global tier {global_GBps:g} GB/s", va="bottom", fontsize=8, color="#f58518")
    b.set_ylabel("per-rank all-to-all rate (GB/s)")
    b.set_ylim(0, local_GBps * 1.15)
    b.set_title("the 3:1 split: past one rack the 200 GB/s side paces", fontsize=10)
    b.legend(fontsize=8, frameon=False, loc="lower left")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(w, [f"{x:,}" for x in w], fontsize=8)
        ax.set_xlabel("EP width (chips per group)")
        ax.axvspan(128 * 1.2, w.max() * 1.3, color="#f58518", alpha=0.07)
        ax.grid(alpha=0.3)
    a.text(180, a.get_ylim()[1] * 0.97, "spans racks", fontsize=8, color="#b05a00", va="top")
    fig.suptitle("EP width on the Jalapeño pod (2,048 chips, 16 racks, 8 rails, leaf=switched)", fontsize=11)
    fig.subplots_adjust(wspace=0.25, left=0.07, right=0.98, top=0.86, bottom=0.12)
    fig.savefig(path, facecolor="white")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    G = build("jalapeno-pod")
    tiers = chip_tier_bandwidth(G)[0]      # GB/s per direction of chip rank 0, by tier
    local_GBps, global_GBps = tiers["local"], tiers["global"]
    rows = results(G)
    print("EP all-to-all on jalapeno-pod (fabricsim.collectives.price, flow-level)\n")
    print_table(rows, local_GBps, global_GBps)
    path = figure(rows, local_GBps, global_GBps, out / "ep_width.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
