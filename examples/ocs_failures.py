"""Optical circuit switches down on an Ironwood-class torus: what an all-to-all loses.

Ironwood joins 4x4x4 cubes into a 3D torus through 48 optical circuit switches (OCS), 16
per axis, one per face position (`fabricsim domains ironwood` lists them).  One OCS down
takes every link it carries.  On an 8x8x16 pod (1,024 chips) this script prices an
all-to-all over every chip (S = 1 GiB per rank):

* one OCS down per axis, by the link-load bound (the intact pod solved as translation
  classes, each failure as those classes less the flows it touches, rerouted: exact);
* the same for the long (z) axis flow-level, every flow of the degraded pod: the
  all-to-all is paced by its busiest links, so the two agree;
* 1, 2, 4 and 8 z-axis OCSes down together, by the bound; with all 16 down the z rings
  are cut between cubes and the pairs across them have no route (a partial result).

On the full 16x24x24 pod the bound takes ~70 s per OCS and the flow-level price does not
fit in 24 GiB (docs/benchmarks.md, Speed).

    python examples/ocs_failures.py [OUTDIR]      # writes OUTDIR/ocs_failures.png
"""
from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure

from fabricsim.collectives import by_size, price
from fabricsim.collectives.whatif import whatif
from fabricsim.fabrics import build
from fabricsim.topo.failures import domains

DIMS = (8, 8, 16)
SIZE = 2 ** 30
PER_AXIS = {"x": 0, "y": 16, "z": 32}       # OCS ids 16a .. 16a + 15 serve axis a
Z_COUNTS = (1, 2, 4, 8)


def results() -> dict:
    G = build("ironwood", dims=DIMS)
    kw = dict(groups=by_size(G, len(G)), size_bytes=SIZE, algorithm="direct")
    base_bound = price(G, "all-to-all", bound_only=True, **kw)
    base_flow = price(G, "all-to-all", **kw)
    links = {d.id: len(d.edges) for d in domains(G)["ocs"]}

    def bound(ids):
        return whatif(G, [f"ocs:{i}" for i in ids], "all-to-all", baseline=base_bound, bound_only=True, **kw)
    axes = [{"axis": a, "ocs": i, "links": links[str(i)], "bound": bound([i]).slowdown} for a, i in PER_AXIS.items()]
    z = PER_AXIS["z"]
    flow = whatif(G, [f"ocs:{z}"], "all-to-all", baseline=base_flow, **kw).slowdown
    curve = [{"count": k, "bound": bound(range(z, z + k)).slowdown} for k in Z_COUNTS]
    cut = bound(range(z, z + 16)).degraded
    return {"base_us": base_flow.time_s * 1e6, "axes": axes, "flow_z": flow, "curve": curve,
            "cut_pairs": cut.unreachable_pairs["count"], "cut_partial": cut.partial}


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = results()
    print(f"all-to-all over {DIMS[0] * DIMS[1] * DIMS[2]:,} chips ({'x'.join(map(str, DIMS))}), S = 1 GiB: "
          f"intact {res['base_us']:,.1f} us")
    print(f"{'axis':<6}{'OCS':>5}{'links':>7}{'bound slowdown':>17}")
    for r in res["axes"]:
        print(f"{r['axis']:<6}{r['ocs']:>5}{r['links']:>7}{r['bound']:>17.6f}")
    z = next(r for r in res["axes"] if r["axis"] == "z")
    print(f"z flow-level {res['flow_z']:.6f} against bound {z['bound']:.6f}")
    print("z-axis OCSes down together:")
    for r in res["curve"]:
        print(f"  {r['count']:>2} down: x{r['bound']:.6f}")
    print(f"  16 down: {res['cut_pairs']:,} pairs without a route (partial: {res['cut_partial']})")
    fig = Figure(figsize=(8, 3.4))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
    ax1.bar([r["axis"] for r in res["axes"]], [r["bound"] - 1 for r in res["axes"]], color="#4C72B0")
    ax1.set_title("one OCS down, by axis")
    ax1.set_ylabel("all-to-all slowdown - 1")
    ax2.plot([r["count"] for r in res["curve"]], [r["bound"] for r in res["curve"]], "o-", color="#C44E52")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(Z_COUNTS, [str(k) for k in Z_COUNTS])
    ax2.set_xlabel("z-axis OCSes down")
    ax2.set_ylabel("slowdown")
    ax2.set_title("link-load bound")
    fig.suptitle(f"Ironwood-class {'x'.join(map(str, DIMS))}, all-to-all of 1 GiB per chip")
    fig.tight_layout()
    path = out / "ocs_failures.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
