"""Google TPU 8t: the 9,600-chip 3D-torus superpod, and Virgo, the fabric joining 14 superpods.

Figures (tags as in ``shared/FACTS.md``: F found, F2 second-hand, I inferred, D derived):

Superpod (``tpu8t``)
* 9,600 chips per superpod in a 3D torus (F: Google, "Our eighth generation TPUs", Cloud Next
  2026, quoted at https://althacker.news/item?id=47862816; seed 000/004).  4x4x4 cubes joined by
  optical circuit switches as in Ironwood/TPU v4 (F2, FACTS §3): 9,600 = 150 cubes.
* "double the interchip bandwidth of the previous generation" (F, same quote): Ironwood's 1.2
  TB/s bidir ICI per chip -> 2.4 TB/s bidir per chip (D) = 1.2 TB/s per direction over 6 links
  = 200 GB/s per link per direction, raw (D) = 8 lanes x 200G (I).
* Torus shape not published (I): 20x20x24 = 9,600 (each a multiple of 4; diameter 10+10+12 = 32).
* ~1 us per ICI hop as for earlier TPUs (F for v4/v5p/Ironwood, assumed here, I).

Virgo (``tpu8t-virgo``)
* 14 superpods x 9,600 = 134,400 chips in one fabric; flat two-layer non-blocking topology of
  high-radix switches; independent switching planes (F: Google, "Introducing Virgo Network",
  https://cloud.google.com/blog/products/networking/introducing-virgo-megascale-data-center-fabric;
  134,400 and "14 pods of 9,600" F2 SemiAnalysis via
  https://gentic.news/article/googles-virgo-network and https://theinformationmachine.fyi/items/24098/).
* 47 Pb/s non-blocking bisection (F) = 350 Gb/s per chip (D: 47e15 / 134,400); the default is a
  400G NIC (~400 Gb/s scale-out per chip, I) as ``planes`` (4) x ``plane_gbps`` (100, I: 100G
  breakouts are what SemiAnalysis describes); ``plane_gbps=87.5`` matches the 47 Pb/s.
* Switches (I): 102.4 Tb/s, 1,024 x 100G ports (``BCM78910`` stands in for Google's own part).
  Per plane, a leaf takes 480 chips (480 ports down, 480 up) and gives 3 x 100G to each of 160
  spines; 20 leaves per superpod, 280 leaves per plane; each spine uses 840 of 1,024 ports.
  Chip ``i`` sits under leaf ``i // 480`` in every plane.

What the Virgo graph leaves out (said here and in its ``inferred`` attribute): the ICI torus
inside each superpod.  ``tpu8t-virgo`` is the scale-out network alone, each chip a leaf port
in every plane, so an all-to-all over all 134,400 chips is priced on Virgo's links only (13/14
of its bytes cross superpods anyway).  With the torus in the graph the chips would forward and
be told apart by their torus position, and no fold would apply.  By default (``leaf_groups``)
the 20 leaves of a superpod in one plane are one node, so the chips of a superpod are
interchangeable (twins, ``fabricsim.topo.routing.ecmp.fold_twins``) and the all-to-all folds
exactly into 14 x 14 classes; with one node per leaf it is 280 x 280 classes and the generic
router (minutes).  See :func:`tpu8t_virgo` for why the grouping keeps the price.
"""
from __future__ import annotations

import math

import networkx as nx

from ..topo.contract import ASICS, CHIP, SWITCH, bundle_attrs
from ..topo.devices import Device, device, register_device
from .registry import register
from .torus import ironwood
from ..topo.errors import BadInput

__all__ = ["tpu8t", "tpu8t_virgo"]

SUPERPOD = 9600            # chips (F)
MAX_CHIPS = 200_000        # refuse bigger tori before building (20 superpods' worth)
CUBE = 4                   # 4x4x4 cubes (F2)
LINKS = 6                  # +-x, +-y, +-z (F)
LANES_PER_LINK = 8         # 200 GB/s = 1.6 Tb/s = 8 x 200G (I)
LINK_GBPS = 200.0 * 8      # 200 GB/s per link per direction, raw (D)
SUPERPODS = 14             # superpods in one Virgo fabric (F2)
LEAF_CHIPS = 480           # chips per leaf per plane (I)
SPINES = 160               # spines per plane (I)
UP_PER_SPINE = LEAF_CHIPS // SPINES   # 3 x 100G from each leaf to each spine (I)
CHIP_LEAF_NS, LEAF_SPINE_NS = 10.0, 100.0   # ~2 m copper/AOC to the leaf, ~20 m optics up (I)

TPU8T = register_device(Device(
    name="tpu-8t", kind="chip", lanes=LINKS * LANES_PER_LINK + 4, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((LINKS, 1600.0), (4, 100.0)), lanes_by_tier={"ici": LINKS * LANES_PER_LINK, "virgo": 4},
    description="Google TPU 8t: 6 ICI links x 200 GB/s per direction (2.4 TB/s bidir), ~400G Virgo NIC",
    source="Google TPU 8 announcement (F: 9,600 chips, double Ironwood's ICI -> 2.4 TB/s bidir, D); "
           "8 x 200G lanes per link I; Virgo NIC 4 x 100G I"))


LEAF_GROUP = register_device(Device(
    name="virgo-leaf-group", kind="switch", lanes=(SUPERPOD // LEAF_CHIPS) * 1024, lane_gbps=100.0,
    port_modes=(((SUPERPOD // LEAF_CHIPS) * 1024, 100.0),), latency_ns=450.0,
    description="the 20 Virgo leaf switches of one superpod in one plane as one node: 20 x 1,024 x 100G",
    source="I: 20 x a 102.4T switch of 1,024 x 100G (BCM78910 stands in); a modelling group, not a part"))


def _check_link(link_GBps: float) -> float:
    if isinstance(link_GBps, bool) or not isinstance(link_GBps, (int, float)) or not 0 < link_GBps < 1e6:
        raise BadInput(f"link_GBps={link_GBps!r} must be a number > 0 (200 raw per direction, D)")
    return float(link_GBps)


@register("tpu8t", description="Google TPU 8t superpod: 9,600 chips in a 3D torus of 4x4x4 cubes joined by "
                               "optical circuit switches, 2.4 TB/s bidir ICI per chip (200 GB/s per link per "
                               "direction); torus shape 20x20x24 inferred",
          source="Google TPU 8 announcement, Cloud Next 2026 (F: 9,600 chips, 3D torus, 2x Ironwood ICI); cubes "
                 "and OCS F2 (TPU v4/Ironwood); 20x20x24 shape, 8 x 200G lanes, 1 us hops I")
def tpu8t(*, dims: tuple[int, int, int] = (20, 20, 24), link_GBps: float = 200.0) -> nx.Graph:
    """A TPU 8t superpod: the Ironwood cube-and-OCS torus with TPU 8t chips and links.

    Parameters
    ----------
    dims : tuple of 3 int
        Torus shape, each a multiple of 4 (20x20x24 = 9,600, I).
    link_GBps : float
        One ICI link's rate per direction, GB/s (200 raw, D from 2.4 TB/s bidir per chip).

    Returns
    -------
    networkx.Graph
        As :func:`fabricsim.fabrics.torus.ironwood` (``cube``, ``rack``, ``tray``, ``ocs`` tags,
        ``routing="dor"``) with ``model="tpu-8t"`` and 8-lane links; graph ``inferred``.

    Examples
    --------
    >>> G = tpu8t(dims=(4, 4, 8))
    >>> sum(G.edges["c00.00.00", m]["capacity_gbps"] for m in G["c00.00.00"]) / 8 * 2   # GB/s bidir
    2400.0
    """
    link = _check_link(link_GBps)
    dims = tuple(dims)
    if all(isinstance(k, int) and not isinstance(k, bool) for k in dims) and math.prod(dims) > MAX_CHIPS:
        raise BadInput(f"dims={'x'.join(map(str, dims))} gives {math.prod(dims):,} chips (~{6 * math.prod(dims):,} "
                         f"graph edge ends); the catalog builds at most {MAX_CHIPS:,} (a TPU 8t superpod is 9,600)")
    G = ironwood(dims=dims, link_GBps=90.0)     # the cube/tray/OCS layout; rates are set below
    lane = link * 8 / LANES_PER_LINK
    for _, d in G.nodes(data=True):
        d["model"] = TPU8T.name
    for *_, e in G.edges(data=True):
        e.update(bundle_attrs(lanes=e["lanes"] // 4 * LANES_PER_LINK, lane_gbps=lane,
                              port_gbps=LANES_PER_LINK * lane, medium=e["medium"], tier=e["tier"],
                              latency_ns=e["latency_ns"]))
    G.graph["family"] = "tpu-ici"  # step model constants: collectives/cost/families/tpu-ici.toml
    G.graph["accelerator"] = "tpu8t"     # roofline entry in topo/accelerators.toml
    G.graph["inferred"] = (f"torus shape {'x'.join(map(str, dims))} inferred (9,600 chips is published, the "
                           f"shape is not); 8 x 200G lanes per link; ~1 us per hop; OCS numbering as Ironwood")
    return G


@register("tpu8t-virgo", description="Google Virgo: 14 TPU 8t superpods = 134,400 chips on a flat two-layer "
                                     "non-blocking multi-plane Clos, ~400 Gb/s scale-out per chip; the "
                                     "superpods' ICI tori left out, a superpod's leaves one node per plane by "
                                     "default; planes, switches and leaf sizes inferred",
          source="Google Virgo Network blog (F: flat two-layer non-blocking, planes, 47 Pb/s); SemiAnalysis via "
                 "gentic.news (F2: 134,400 chips, 14 x 9,600); 4 x 100G planes, 480-chip leaves, 160 spines I")
def tpu8t_virgo(*, superpods: int = SUPERPODS, planes: int = 4, plane_gbps: float = 100.0,
                leaf_groups: bool = True) -> nx.Graph:
    """The Virgo scale-out fabric of ``superpods`` TPU 8t superpods (ICI not included).

    Parameters
    ----------
    superpods : int
        Superpods of 9,600 chips, 1..17 (14, F2; 17 fills the spines' 1,024 ports).
    planes : int
        Independent switching planes, one NIC port per chip in each (4, I).
    plane_gbps : float
        Rate of a chip's port into one plane, per direction, Gb/s (100, I).
    leaf_groups : bool
        ``True`` (default): the 20 leaves of one superpod in one plane are one node
        (``virgo-leaf-group``, 20 switches' ports), so every chip of a superpod has the same
        neighbours and the chips of a superpod are interchangeable (twins): the 134,400-chip
        all-to-all folds into 14 x 14 classes.  ``False``: every 480-chip leaf is its own
        node (for leaf failures); the fold then has 280 x 280 classes per plane set and the
        full all-to-all takes minutes.

    Notes
    -----
    What grouping changes: two chips of one superpod under different leaves are 2 links
    apart (chip, group, chip) instead of 4 (chip, leaf, spine, leaf, chip), and that traffic
    stays off the spines.  In a non-blocking Clos the chips' own ports are the bottleneck
    either way, so rates are unchanged; the all-to-all's latency is set by its cross-superpod
    (4-link) flows, which are unchanged; ``tests/fabrics/test_catalog_seed_systems.py`` checks the two
    representations price the same all-to-all on 2 superpods.

    Returns
    -------
    networkx.Graph
        Chips ``v000123`` (``superpod``, ``cube``, ``forwards=False``), leaves ``p2/leaf017``
        or leaf groups ``p2/pod05`` (role ``leaf``, ``plane``, ``superpod``; a group has
        ``asics=20``, the physical leaves it stands for), spines
        ``p2/spine101`` (role ``spine``); tiers ``virgo`` (chip--leaf) and ``virgo-spine``;
        ``routing="ecmp"``; graph ``inferred``.

    Examples
    --------
    >>> G = tpu8t_virgo(superpods=1, planes=2)
    >>> sum(d["kind"] == "chip" for _, d in G.nodes(data=True)), G.degree("v000000")
    (9600, 2)
    """
    for name, v, hi in (("superpods", superpods, 17), ("planes", planes, 16)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise BadInput(f"{name}={v!r} is out of range; valid: 1..{hi}")
    if isinstance(plane_gbps, bool) or not isinstance(plane_gbps, (int, float)) or not 0 < plane_gbps <= 100.0:
        raise BadInput(f"plane_gbps={plane_gbps!r} must be a number in (0, 100] Gb/s (one 100G port, I)")
    sw = device("BCM78910")
    n = superpods * SUPERPOD
    per_pod = SUPERPOD // LEAF_CHIPS                        # 20 leaves per superpod per plane
    chips_per_node = SUPERPOD if leaf_groups else LEAF_CHIPS
    nodes = n // chips_per_node
    leaf_dev = LEAF_GROUP if leaf_groups else sw
    ids = [f"v{i:06d}" for i in range(n)]
    # Virgo is a data-centre Ethernet-class network (high-radix switches, multi-plane, NIC per chip): no
    # published collective latencies, so NCCL's NET rows stand in (collectives/cost/families/tomahawk-ethernet.toml, I)
    G = nx.Graph(routing="ecmp", family="tomahawk-ethernet")
    G.add_nodes_from((cid, {"kind": CHIP, "model": TPU8T.name, "forwards": False, "rank": i,
                            "superpod": i // SUPERPOD, "cube": i // 64}) for i, cid in enumerate(ids))
    down = bundle_attrs(lanes=1, lane_gbps=plane_gbps, port_gbps=plane_gbps, medium="copper", tier="virgo",
                        latency_ns=CHIP_LEAF_NS)
    width = UP_PER_SPINE * (per_pod if leaf_groups else 1)
    up = bundle_attrs(lanes=width, lane_gbps=plane_gbps, port_gbps=plane_gbps, medium="optical",
                      tier="virgo-spine", latency_ns=LEAF_SPINE_NS)
    for p in range(planes):
        spines = [f"p{p}/spine{s:03d}" for s in range(SPINES)]
        G.add_nodes_from((s, {"kind": SWITCH, "model": sw.name, "role": "spine", "forwards": True, "plane": p,
                              "latency_ns": sw.latency_ns}) for s in spines)
        for k in range(nodes):
            lid = f"p{p}/pod{k:02d}" if leaf_groups else f"p{p}/leaf{k:03d}"
            G.add_node(lid, kind=SWITCH, model=leaf_dev.name, role="leaf", forwards=True, plane=p,
                       superpod=k * chips_per_node // SUPERPOD, latency_ns=sw.latency_ns)
            if leaf_groups:
                G.nodes[lid][ASICS] = per_pod     # the node stands for 20 physical leaf switches
            G.add_edges_from(((cid, lid, dict(down)) for cid in ids[k * chips_per_node:(k + 1) * chips_per_node]))
            G.add_edges_from(((lid, s, dict(up)) for s in spines))
    G.graph["inferred"] = (f"Virgo wiring inferred: {planes} planes x {plane_gbps:g}G per chip, {LEAF_CHIPS}-chip "
                           f"leaves, {SPINES} spines per plane with {UP_PER_SPINE} x {plane_gbps:g}G from every "
                           f"leaf (non-blocking), 102.4T switches; the superpods' ICI tori are not in this graph"
                           + ("; the 20 leaves of a superpod in a plane are one node (leaf_groups)"
                              if leaf_groups else ""))
    G.graph["accelerator"] = "tpu8t"     # roofline entry in topo/accelerators.toml
    return G
