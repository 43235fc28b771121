"""TP all-reduce on NVL72 against the Jalapeño rack, with and without in-network reduction.

TP groups of 8 (the size the Jalapeño benchmarks ran), every group of the rack at once
(9 on NVL72, 16 on the Jalapeño rack), S from 1 MiB to 4 GiB per rank.  NVL72's
NVLink switches reduce in the network (NVLS); the Jalapeño rack's Tomahawk 6 local
switches do not, so its best is the cheapest of ring, direct and halving-doubling.
"Without" on NVL72 is that same cheapest non-NVLS algorithm.

    python examples/tp_allreduce.py [OUTDIR]      # writes OUTDIR/tp_allreduce.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives import algorithms_for, by_size, price, view_of
from fabricsim.fabrics import build
from fabricsim.topo.failures import chip_tier_bandwidth

TP = 8
SIZES = tuple(2 ** k for k in range(20, 33, 2))        # 1 MiB ... 4 GiB per rank
MEASURED_NVL72 = (835.0, 847.0)   # 72-rank all-reduce busbw at 4-8 GiB, public nccl-tests (FACTS §2, F)


def best(G, groups, size, *, exclude=()) -> object:
    """The cheapest algorithm that applies, leaving out ``exclude``; ties go to the name."""
    algs = [a for a in algorithms_for("all-reduce", groups, view_of(G)) if a not in exclude]
    reps = [price(G, "all-reduce", groups=groups, size_bytes=size, algorithm=a) for a in algs]
    return min(reps, key=lambda r: (r.time_s, r.algorithm))


def results() -> dict:
    nvl, rack = build("nvl72"), build("jalapeno-rack")
    g_nvl, g_rack = by_size(nvl, TP), by_size(rack, TP)
    rows = []
    for s in SIZES:
        rows.append({"size": s,
                     "nvls": price(nvl, "all-reduce", groups=g_nvl, size_bytes=s, algorithm="nvls"),
                     "nvl_sw": best(nvl, g_nvl, s, exclude=("nvls",)),
                     "rack": best(rack, g_rack, s)})
    # the calibration point: one 72-rank group at 4 GiB, as the public measurement ran
    g72 = by_size(nvl, 72)
    check = {"nvls": price(nvl, "all-reduce", groups=g72, size_bytes=2 ** 32, algorithm="nvls"),
             "ring": price(nvl, "all-reduce", groups=g72, size_bytes=2 ** 32, algorithm="ring")}
    line = {"nvl72": chip_tier_bandwidth(nvl)[0]["nvlink"], "jalapeno-rack": chip_tier_bandwidth(rack)[0]["local"]}
    return {"rows": rows, "check": check, "line": line}


def _size(b: int) -> str:
    return f"{b / 2**30:g} GiB" if b >= 2 ** 30 else f"{b / 2**20:g} MiB"


def print_table(res: dict) -> None:
    print(f"{'S per rank':>10}  {'NVL72 NVLS':>16}  {'NVL72 without':>26}  {'Jalapeño rack':>26}  "
          f"{'NVLS / rack':>11}")
    print(f"{'':>10}  {'us':>7} {'busbw':>8}  {'us':>7} {'busbw':>8} {'algorithm':>9}  "
          f"{'us':>7} {'busbw':>8} {'algorithm':>9}  {'time':>11}")
    for r in res["rows"]:
        a, b, c = r["nvls"], r["nvl_sw"], r["rack"]
        print(f"{_size(r['size']):>10}  {a.time_s * 1e6:>7.1f} {a.busbw_GBps:>8.1f}  "
              f"{b.time_s * 1e6:>7.1f} {b.busbw_GBps:>8.1f} {b.algorithm[:9]:>9}  "
              f"{c.time_s * 1e6:>7.1f} {c.busbw_GBps:>8.1f} {c.algorithm[:9]:>9}  {c.time_s / a.time_s:>10.2f}x")
    ln = res["line"]
    print(f"\nline rate per GPU/chip and direction: NVL72 {ln['nvl72']:g} GB/s, Jalapeño local {ln['jalapeno-rack']:g} "
          f"GB/s; busbw in GB/s (nccl-tests: algbw x 2(n-1)/n)")
    ck = res["check"]
    print(f"calibration, 72 ranks at 4 GiB on NVL72: nvls busbw {ck['nvls'].busbw_GBps:,.1f}, ring busbw "
          f"{ck['ring'].busbw_GBps:,.1f}; measured {MEASURED_NVL72[0]:g}-{MEASURED_NVL72[1]:g} GB/s "
          f"(public nccl-tests, FACTS §2)")


def figure(res: dict, path: Path) -> Path:
    rows = res["rows"]
    s = np.array([r["size"] for r in rows]) / 2 ** 20
    series = [("NVL72 with NVLS (in-network reduction)", "nvls", "#54a24b", "o-"),
              ("NVL72 without (best of ring, direct, halving-doubling)", "nvl_sw", "#54a24b", "s--"),
              ("Jalapeño rack (no in-network reduction)", "rack", "#4c78a8", "^-")]
    fig = Figure(figsize=(12.5, 4.9), dpi=110)
    a, b = fig.subplots(1, 2)
    for label, key, color, style in series:
        a.plot(s, [r[key].time_s * 1e6 for r in rows], style, color=color, label=label)
        b.plot(s, [r[key].busbw_GBps for r in rows], style, color=color, label=label)
    ln = res["line"]
    b.axhline(ln["nvl72"], color="#54a24b", lw=0.8, ls=":")
    b.text(s[0], ln["nvl72"], f"NVLink {ln['nvl72']:g} GB/s", va="bottom", fontsize=8, color="#2d6a2d")
    b.axhline(ln["jalapeno-rack"], color="#4c78a8", lw=0.8, ls=":")
    b.text(s[0], ln["jalapeno-rack"], f"Jalapeño local {ln['jalapeno-rack']:g} GB/s", va="bottom", fontsize=8,
           color="#4c78a8")
    b.axhspan(*MEASURED_NVL72, color="#e45756", alpha=0.35)
    b.text(s[-1], MEASURED_NVL72[0], "measured NVL72, 72 ranks, 4-8 GiB", ha="right", va="top", fontsize=8,
           color="#a02020")
    a.set_xscale("log", base=2)
    a.set_yscale("log")
    a.set_ylabel("all-reduce time (us)")
    a.set_title(f"TP{TP} all-reduce, every TP group of the rack at once", fontsize=10)
    b.set_xscale("log", base=2)
    b.set_ylabel("bus bandwidth (GB/s)")
    b.set_ylim(0, max(r["nvls"].busbw_GBps for r in rows) * 1.12)
    b.set_title("busbw: in-network reduction halves what each link carries", fontsize=10)
    for ax in (a, b):
        ax.set_xticks(s, [_size(int(x * 2 ** 20)) for x in s], fontsize=8)
        ax.set_xlabel("S per rank")
        ax.grid(alpha=0.3)
    a.legend(fontsize=8, frameon=False, loc="upper left")
    fig.suptitle("TP all-reduce: NVIDIA NVL72 (GB200) against the OpenAI Jalapeño rack", fontsize=11)
    fig.subplots_adjust(wspace=0.22, left=0.07, right=0.98, top=0.86, bottom=0.12)
    fig.savefig(path, facecolor="white")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = results()
    print(f"TP{TP} all-reduce, NVL72 against the Jalapeño rack (fabricsim.collectives.price, flow-level)\n")
    print_table(res)
    path = figure(res, out / "tp_allreduce.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
