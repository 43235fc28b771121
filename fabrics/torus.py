"""Google TPU 3D tori: the 1,152-chip 8x12x12 comparator and an Ironwood-class 9,216-chip pod.

Figures: ``shared/FACTS.md`` §3 (TPU v4/v5p/Ironwood public material; §4 formulas).

Both fabrics are :func:`fabricsim.topo.builders.torus` graphs: chips only, all forwarding,
ids ``"c03.04.05"`` (zero-padded x.y.z), ring positions ``x``, ``y``, ``z``, ``rank`` =
row-major over (x, y, z) with z fastest, graph attributes ``dims`` ("8x12x12") and
``routing="dor"``.  A ring of 2 is one bundle of both links (doubled lanes).

ICI link model (I, from F figures): a link is 100 GB/s raw per direction for v5p and
Ironwood (F), i.e. 4 lanes x 200G; Ironwood's 1.2 TB/s bidir per chip = 6 links x 100 GB/s
per direction (F) agrees.  The graph carries that raw rate (4 lanes x 200G on the edges); the
90 GB/s usable (F) is the tpu-ici family's efficiency 0.9 (collectives/cost/families/tpu-ici.toml),
applied once by the price engine's step model (``protocol="ideal"`` prices the raw rate).
The ~1 us per hop (F) is the link's ``latency_ns``: it folds the forwarding chip's delay
into the link it enters, so a route's latency is hops x 1 us.
"""
from __future__ import annotations

import networkx as nx

from ..topo.builders import check_rate, torus as torus_builder
from ..topo.devices import Device, register_device
from .registry import register
from ..topo.errors import BadInput

__all__ = ["torus", "ironwood"]

LINKS_PER_CHIP = 6        # +-x, +-y, +-z ICI links (F)
LANES_PER_LINK = 4        # 100 GB/s raw = 800 Gb/s = 4 x 200G (I)
HOP_NS = 1000.0           # ~1 us per hop (F, FACTS §3)
CUBE = 4                  # 4x4x4 = 64 chips = one rack (F2)
TRAY = (2, 2, 1)          # trays of 4 chips, 2x2x1 in (x, y, z) (F2)

TPU_V5P = register_device(Device(
    name="tpu-v5p", kind="chip", lanes=LINKS_PER_CHIP * LANES_PER_LINK, lane_gbps=200.0,
    port_modes=((LINKS_PER_CHIP, 800.0),), lanes_by_tier={"ici": LINKS_PER_CHIP * LANES_PER_LINK},
    description="Google TPU v5p: 6 ICI links, 100 GB/s raw (90 usable) per link per direction",
    source="Google Cloud TPU v5p docs (F: 90 GB/s usable per link); 4 x 200G lanes per link (I)"))
TPU7X = register_device(Device(
    name="tpu7x", kind="chip", lanes=LINKS_PER_CHIP * LANES_PER_LINK, lane_gbps=200.0,
    port_modes=((LINKS_PER_CHIP, 800.0),), lanes_by_tier={"ici": LINKS_PER_CHIP * LANES_PER_LINK},
    description="Google TPU7x Ironwood: 6 ICI links, 1.2 TB/s bidir per chip",
    source="Google Ironwood announcement (F: 1.2 TB/s bidir ICI, 9,216 chips); 4 x 200G per link (I)"))


def _lane_gbps(link_GBps: float) -> float:
    check_rate("link_GBps", link_GBps, unit="GB/s (100 raw for v5p/Ironwood)", scale=8.0)
    return link_GBps * 8.0 / LANES_PER_LINK   # GB/s -> Gb/s, split over the link's lanes


@register("torus", description="3D torus of TPU-class chips (default 8x12x12 = 1,152, diameter 16), "
                               "6 ICI links of 100 GB/s raw per direction",
          source="FACTS §3: v5p/Ironwood 100 GB/s raw (90 usable) per link (F); 8x12x12 shape (I)")
def torus(*, dims: tuple[int, ...] = (8, 12, 12), link_GBps: float = 100.0) -> nx.Graph:
    """A torus of TPU v5p-class chips.

    Parameters
    ----------
    dims : tuple of int
        Ring lengths, 1 to 4 dimensions (``8x12x12`` on the command line).  8x12x12 is
        the 1,152-chip shape TPU 8i's Boardfly is compared with: diameter 4+6+6 = 16.
    link_GBps : float
        Raw rate of one ICI link per direction, GB/s (100 for v5p/Ironwood, F; 90 of it usable,
        the tpu-ici family's efficiency).

    Examples
    --------
    >>> G = torus(dims=(4, 4, 4))
    >>> G.number_of_nodes(), G.number_of_edges()
    (64, 192)
    """
    G = torus_builder(dims, lanes_per_link=LANES_PER_LINK, lane_gbps=_lane_gbps(link_GBps),
                      chip_model="tpu-v5p", medium="copper", tier="ici", latency_ns=HOP_NS)
    G.graph["family"] = "tpu-ici"  # step model constants: collectives/cost/families/tpu-ici.toml
    G.graph["accelerator"] = "tpu-v5p"   # roofline entry in topo/accelerators.toml
    return G


@register("ironwood", description="Google Ironwood (TPU7x) pod: 9,216 chips in a 3D torus of 4x4x4 cubes "
                                  "joined by optical circuit switches; default shape 16x24x24 (the physical "
                                  "pod shape is not published)",
          source="Google Ironwood (F: 9,216 chips, 1.2 TB/s bidir ICI); cubes/trays F2 (TPU v4 paper); "
                 "shape and OCS numbering I")
def ironwood(*, dims: tuple[int, int, int] = (16, 24, 24), link_GBps: float = 100.0) -> nx.Graph:
    """An Ironwood-class pod: a 3D torus built from 4x4x4 cubes.

    Parameters
    ----------
    dims : tuple of 3 int
        Torus shape, each a multiple of 4.  16x24x24 = 9,216 (F: the chip count) is one
        shape with that count; Google has not published the physical one (I).
    link_GBps : float
        Raw rate of one ICI link per direction, GB/s (100, F; 90 usable: the family's efficiency).

    Returns
    -------
    networkx.Graph
        The torus of :func:`torus` with ``tpu7x`` chips and, per chip:

        * ``cube`` (= ``rack``): row-major index of the 4x4x4 cube, x slowest.
        * ``tray``: 0..15 within the cube (unique only together with ``cube``/``rack``,
          as the contract says of ``tray``): a tray is 2x2 chips in (x, y) at one z,
          ``tray = ((x % 4 // 2) * 2 + y % 4 // 2) * 4 + z % 4``.

        Edges: inside a tray ``medium="pcb"``; between trays of one cube ``copper``;
        every link leaving a cube face (including a 4-long ring's wraparound) goes
        through an optical circuit switch: ``medium="optical"`` and an ``ocs`` tag.

    Notes
    -----
    OCS numbering (I, after TPU v4: 48 OCSes, one per axis and face position): the link
    leaving a cube along axis ``a`` from face position ``(i, j)`` (the chip's in-cube
    coordinates on the other two axes) passes OCS ``16 * a + 4 * i + j``.  OCSes are
    passive: the link is one direct chip-to-chip edge, no extra hop.

    Examples
    --------
    >>> G = ironwood(dims=(4, 4, 8))
    >>> sorted({d["medium"] for *_, d in G.edges(data=True)})
    ['copper', 'optical', 'pcb']
    """
    dims = tuple(dims)
    if len(dims) != 3 or any(isinstance(k, bool) or not isinstance(k, int) or k < CUBE or k % CUBE
                             for k in dims):
        raise BadInput(f"dims={dims!r}: an Ironwood pod is 3 ring lengths, each a positive multiple of "
                         f"{CUBE} (whole 4x4x4 cubes), e.g. 16x24x24 = 9,216 chips")
    G = torus_builder(dims, lanes_per_link=LANES_PER_LINK, lane_gbps=_lane_gbps(link_GBps),
                      chip_model="tpu7x", medium="copper", tier="ici", latency_ns=HOP_NS)
    cubes = tuple(k // CUBE for k in dims)
    for n, d in G.nodes(data=True):
        x, y, z = d["x"], d["y"], d["z"]
        cube = (x // CUBE * cubes[1] + y // CUBE) * cubes[2] + z // CUBE
        d.update(cube=cube, rack=cube,  # one cube is one rack (F2)
                 tray=((x % CUBE // TRAY[0]) * 2 + y % CUBE // TRAY[1]) * CUBE + z % CUBE)
    axes = "xyz"
    node = dict(G.nodes(data=True))
    for u, v, e in G.edges(data=True):
        a = axes.index(e["axis"])
        du, dv = node[u], node[v]
        lo = du[e["axis"]]
        if dv[e["axis"]] != (lo + 1) % dims[a]:
            lo = dv[e["axis"]]
        if lo % CUBE == CUBE - 1:
            # the link leaves the cube's + face: through an OCS
            i, j = (du[axes[b]] % CUBE for b in range(3) if b != a)
            e.update(medium="optical", ocs=16 * a + CUBE * i + j)
        elif (du["rack"], du["tray"]) == (dv["rack"], dv["tray"]):
            e["medium"] = "pcb"
    G.graph["cube"] = "x".join([str(CUBE)] * 3)
    G.graph["family"] = "tpu-ici"  # step model constants: collectives/cost/families/tpu-ici.toml
    G.graph["accelerator"] = "ironwood"  # roofline entry in topo/accelerators.toml
    return G
