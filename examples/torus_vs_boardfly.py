"""Torus against Boardfly: hop histograms and all-to-all time for 1,152 chips at equal link bandwidth.

The 8x12x12 torus (diameter 4 + 6 + 6 = 16) and TPU 8i's Boardfly (boards of 4 in a ring,
8 boards per group in a copper mesh, 36 groups over optics: 7 hops worst case with the
``spread`` port placement), both with 6 ports per chip at 90 GB/s per link and direction.
One all-to-all over all 1,152 chips, S = 64 MiB per rank.

    python examples/torus_vs_boardfly.py [OUTDIR]      # writes OUTDIR/torus_vs_boardfly.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives import by_size, price
from fabricsim.fabrics import build
from fabricsim.topo.auditing import bisection, hop_stats

LINK_GBPS = 90.0            # GB/s per link and direction on both (the usable ICI rate, F; the torus builds raw 100)
SIZE = 64 * 2 ** 20


def fabrics() -> dict:
    return {"torus 8x12x12": build("torus", dims="8x12x12", link_GBps=LINK_GBPS),
            "Boardfly": build("boardfly", link_GBps=LINK_GBPS)}


def measure(G) -> dict:
    h = hop_stats(G)
    n = G.number_of_nodes()
    r = price(G, "all-to-all", groups=by_size(G, n), size_bytes=SIZE, algorithm="direct")
    links = G.number_of_edges()
    return {"chips": n, "links": links, "hops": h, "bisection_GBps": bisection(G).GBps, "report": r}


def print_table(res: dict) -> None:
    names = list(res)
    rows = [
        ("chips", [f"{res[k]['chips']:,}" for k in names]),
        ("chip-to-chip links", [f"{res[k]['links']:,}" for k in names]),
        ("link GB/s per direction", [f"{LINK_GBPS:g}" for _ in names]),
        ("diameter (hops)", [str(res[k]["hops"].diameter_hops) for k in names]),
        ("mean hops", [f"{res[k]['hops'].mean_hops:.3f}" for k in names]),
        ("bisection GB/s", [f"{res[k]['bisection_GBps']:,.0f}" for k in names]),
        ("all-to-all time (us)", [f"{res[k]['report'].time_s * 1e6:,.1f}" for k in names]),
        ("  bandwidth part (us)", [f"{res[k]['report'].bandwidth_time_s * 1e6:,.1f}" for k in names]),
        ("  latency part (us)", [f"{res[k]['report'].latency_s * 1e6:,.1f}" for k in names]),
        ("all-to-all busbw (GB/s)", [f"{res[k]['report'].busbw_GBps:,.1f}" for k in names]),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"{'':<{w}}  " + "  ".join(f"{k:>14}" for k in names))
    for label, vals in rows:
        print(f"{label:<{w}}  " + "  ".join(f"{v:>14}" for v in vals))
    print("\nhop histogram (ordered chip pairs at each distance):")
    hist = {k: res[k]["hops"].histogram for k in names}
    for d in range(1, max(max(h) for h in hist.values()) + 1):
        print(f"  {d:>2} hops  " + "  ".join(f"{hist[k].get(d, 0):>14,}" for k in names))


def figure(res: dict, path: Path) -> Path:
    names = list(res)
    colors = {names[0]: "#4c78a8", names[1]: "#f58518"}
    fig = Figure(figsize=(12.5, 4.8), dpi=110)
    a, b = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
    width = 0.4
    for i, k in enumerate(names):
        h = res[k]["hops"]
        d = np.array(sorted(h.histogram))
        frac = np.array([h.histogram[x] for x in d]) / sum(h.histogram.values())
        a.bar(d + (i - 0.5) * width, 100 * frac, width=width, color=colors[k],
              label=f"{k}: diameter {h.diameter_hops}, mean {h.mean_hops:.2f}")
        a.axvline(h.diameter_hops, color=colors[k], ls="--", lw=1)
    a.set_xlabel("hops between two chips")
    a.set_ylabel("chip pairs (%)")
    a.set_xticks(range(1, 17))
    a.set_title("hop histograms (dashed: the diameter, 16 against 7)", fontsize=10)
    a.legend(fontsize=8, frameon=False)
    a.grid(axis="y", alpha=0.3)
    bw = [res[k]["report"].bandwidth_time_s * 1e6 for k in names]
    lat = [res[k]["report"].latency_s * 1e6 for k in names]
    x = np.arange(len(names))
    b.bar(x, bw, color=[colors[k] for k in names], label="bandwidth")
    b.bar(x, lat, bottom=bw, color="#bbbbbb", label="latency + overheads")
    for xi, t, k in zip(x, np.add(bw, lat), names):
        b.text(xi, t, f"{t:,.0f} us\nbusbw {res[k]['report'].busbw_GBps:,.0f} GB/s", ha="center", va="bottom",
               fontsize=8)
    b.set_xticks(x, names)
    b.set_ylabel("all-to-all time (us)")
    b.set_ylim(0, max(np.add(bw, lat)) * 1.25)
    b.set_title(f"all-to-all of 1,152 chips, S = {SIZE / 2**20:g} MiB per rank", fontsize=10)
    b.legend(fontsize=8, frameon=False, loc="upper right")
    b.grid(axis="y", alpha=0.3)
    fig.suptitle(f"1,152 chips, 6 ports each at {LINK_GBPS:g} GB/s per link: 3D torus against Boardfly",
                 fontsize=11)
    fig.subplots_adjust(wspace=0.22, left=0.06, right=0.98, top=0.86, bottom=0.12)
    fig.savefig(path, facecolor="white")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = {k: measure(G) for k, G in fabrics().items()}
    print("3D torus against Boardfly at equal link bandwidth (fabricsim.topo.audit, fabricsim.collectives.price)\n")
    print_table(res)
    path = figure(res, out / "torus_vs_boardfly.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
