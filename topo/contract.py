"""The graph contract: what every fabric graph carries, with units.

Every builder, audit, router and solver in fabricsim reads graphs through the
names defined here; ``validate`` checks a graph against them and returns every
violation with the element at fault.  A user's own GraphML or node-link JSON
graph works everywhere a catalog fabric does once it passes ``validate``.

Graph (``G.graph``)
-------------------
name : str
    Fabric name (a catalog key or the file it came from).
params : str
    The builder's parameters as a JSON object (a string, so GraphML round-trips).
routing : str
    Routing policy key: ``ecmp`` (shortest paths through forwarding nodes,
    per-hop equal split), ``tiered`` (Jalapeño: same rack on the ``local`` tier,
    other racks on the ``global`` tier), ``dor`` (dimension order on a torus).
description, source : str
    One line each, shown by ``fabricsim list``.
dims : str (tori)
    Ring lengths joined by ``x`` (``"8x12x12"``); chips carry ``x``, ``y``, ``z``, ``w``.
step_overhead_ns : float (optional)
    Per-step overhead the pricing adds to every collective step (default 1 us).
inferred, generation, port_placement, builder, ... : str (optional)
    Builder-specific notes; ``inferred`` says which figures are inferred rather than published.
failed : str (degraded copies)
    The failures applied, as a JSON list.

Nodes
-----
kind : ``"chip"`` | ``"switch"``
model : str
    A key in the device catalog (:mod:`fabricsim.topo.devices`).
role : str (switches)
    ``local``, ``leaf``, ``rail``, ``nvlink``, ``ualink``, ``spine``, ``router`` ...
asics : int (switches, optional)
    Physical switch ASICs the node stands for, 1 when absent.  A builder that
    collapses several switches into one node (Virgo's ``leaf_groups``: a plane's 20
    leaves of a superpod) says so here, and the audit counts ASICs with it.
reduces : bool (switches, optional)
    The switch reduces in the network (NVLink SHARP); enables the ``nvls`` algorithm.
forwards : bool
    Whether traffic may pass *through* the node.  Switches forward; chips
    forward in a torus or Boardfly, and in a switched fabric only as a
    rail-only relay (chosen by the router, not by ``forwards``).
patch : str (switches, optional)
    A switch that does not switch but patches each chip lane through to one
    fixed far-side switch (Jalapeño ``leaf=static``).  The value names the
    node attribute that must match on both sides (``"column"``); see
    :func:`forwarding_graph`.
rank : int (chips)
    0..N-1 in physical order (rack, tray, slot).
x, y, z : int (chips, optional)
    Torus ring positions.
rack, tray, switch_tray, board, group, plane, cube, column, rail, circuit : int (optional)
    Flat failure-domain and placement tags.  ``tray`` is unique per rack only
    together with ``rack``.

Edges (one edge per bundle of parallel links between two nodes)
-----------------------------------------------------------------
lanes : int
    Parallel SerDes lanes in the bundle.
lane_gbps : float
    Data rate of one lane, one direction, Gb/s (200 for 212.5G PAM4 signalling).
port_gbps : float
    Data rate of one port at the ends of the bundle, Gb/s (800 = 4 x 200G).
capacity_gbps : float
    lanes x lane_gbps: the capacity of *each direction* (full duplex: the
    solver treats the two directions as separate links).
medium : ``"copper"`` | ``"optical"`` | ``"pcb"``
tier : str
    ``local``, ``global``, ``nvlink``, ``ici``, ``ualink`` ...
latency_ns : float
    One-way latency of the link itself (the switch's own latency is the node's
    ``latency_ns`` attribute where set).
ocs, harness : int (optional)
    Shared-fate tags: the optical switch or cable harness the bundle passes.
axis, wrap : int, bool (torus edges)
    The ring dimension of the link and whether it is a wraparound link.
span : str (Boardfly edges)
    ``board`` (ring on a board), ``group`` (copper between boards), ``global`` (optical).
circuit_lanes : int (optional, on chip -- patch-switch bundles)
    Lanes of the bundle patched to each matching far-side switch.

Units live in names: ``*_gbps`` Gb/s, ``*_GBps`` GB/s (1e9 B/s), ``*_ns``, ``*_s``,
``*_bytes``.  Vendors quote bidirectional figures; graphs store per direction.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import networkx as nx

__all__ = [
    "KIND", "MODEL", "ROLE", "FORWARDS", "PATCH", "RANK", "LANES", "LANE_GBPS", "PORT_GBPS",
    "CAPACITY_GBPS", "MEDIUM", "TIER", "LATENCY_NS", "CHIP", "SWITCH", "MEDIA", "DOMAIN_TAGS",
    "ASICS", "Violation", "validate", "chips", "switches", "asics_of", "params_of", "forwarding_graph",
    "add_bundle",
]

# Node attribute names
KIND, MODEL, ROLE, FORWARDS, PATCH, RANK = "kind", "model", "role", "forwards", "patch", "rank"
ASICS = "asics"   # physical switch ASICs a switch node stands for (absent: 1)
CHIP, SWITCH = "chip", "switch"
# Edge attribute names
LANES, LANE_GBPS, PORT_GBPS, CAPACITY_GBPS = "lanes", "lane_gbps", "port_gbps", "capacity_gbps"
MEDIUM, TIER, LATENCY_NS = "medium", "tier", "latency_ns"
MEDIA = ("copper", "optical", "pcb")
DOMAIN_TAGS = ("rack", "tray", "switch_tray", "board", "group", "plane", "cube", "column", "rail", "circuit",
               "ocs", "harness")
# Sane per-direction rate of one lane, Gb/s (I): 1 Mb/s to 10 Pb/s.  Outside it a figure is a typo,
# and a 1e-300 lane makes every priced time overflow.  Builders check their rate parameters against it.
LANE_GBPS_RANGE = (1e-3, 1e7)


@dataclass(frozen=True)
class Violation:
    """One way a graph breaks the contract."""

    where: str  # node id, "u -- v", or "graph"
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


def bundle_attrs(*, lanes: int, lane_gbps: float, port_gbps: float, medium: str, tier: str,
                 latency_ns: float, **tags) -> dict:
    """Edge attributes of one bundle of ``lanes`` parallel lanes, its capacity derived."""
    return {LANES: int(lanes), LANE_GBPS: float(lane_gbps), PORT_GBPS: float(port_gbps),
            CAPACITY_GBPS: float(lanes * lane_gbps), MEDIUM: medium, TIER: tier,
            LATENCY_NS: float(latency_ns), **tags}


def add_bundle(G: nx.Graph, u, v, **attrs) -> None:
    """Add one bundle between ``u`` and ``v`` (keywords as :func:`bundle_attrs`)."""
    G.add_edge(u, v, **bundle_attrs(**attrs))


def bundle_gbps(e: dict) -> float:
    """A bundle's capacity per direction, Gb/s: its ``capacity_gbps`` if set, else lanes x lane rate."""
    cap = e.get(CAPACITY_GBPS)
    return float(cap if cap is not None else e[LANES] * e[LANE_GBPS])


def chips(G: nx.Graph) -> list:
    """Chip node ids in rank order."""
    return sorted((n for n, d in G.nodes(data=True) if d.get(KIND) == CHIP),
                  key=lambda n: G.nodes[n][RANK])


def switches(G: nx.Graph) -> list:
    """Switch node ids in graph order."""
    return [n for n, d in G.nodes(data=True) if d.get(KIND) == SWITCH]


def params_of(G: nx.Graph) -> dict[str, Any]:
    """The builder parameters recorded on the graph."""
    raw = G.graph.get("params", "{}")
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def asics_of(d: dict) -> int:
    """Physical switch ASICs a switch node (its attribute dict ``d``) stands for: ``asics``, else 1."""
    return d.get(ASICS, 1)


def validate(G: nx.Graph, *, devices=None) -> list[Violation]:
    """Check ``G`` against the contract; return every violation (empty when valid).

    Parameters
    ----------
    G : networkx.Graph
    devices : mapping, optional
        Device catalog used to check ``model`` keys; the registry by default.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> validate(build("jalapeno-rack"))
    []
    """
    from .devices import DEVICES
    devices = DEVICES if devices is None else devices
    out: list[Violation] = []
    if G.is_directed() or G.is_multigraph():
        out.append(Violation("graph", "must be an undirected simple graph (one edge per bundle)"))
    from .routing import POLICIES         # late: routing reads the contract
    routing = G.graph.get("routing", "ecmp")
    if not isinstance(routing, str) or routing not in POLICIES:
        out.append(Violation("graph", f"routing {G.graph.get('routing')!r} is not one of "
                                      f"{', '.join(POLICIES)}"))
    ranks = []
    for n, d in G.nodes(data=True):
        kind = d.get(KIND)
        if kind not in (CHIP, SWITCH):
            out.append(Violation(str(n), f"kind {kind!r} is not 'chip' or 'switch'"))
            continue
        if not isinstance(d.get(MODEL), str) or d[MODEL] not in devices:
            out.append(Violation(str(n), f"model {d.get(MODEL)!r} is not in the device catalog"))
        elif devices[d[MODEL]].kind != kind:
            out.append(Violation(str(n), f"model {d[MODEL]!r} is a {devices[d[MODEL]].kind}, node is a {kind}"))
        if not isinstance(d.get(FORWARDS), bool):
            out.append(Violation(str(n), "forwards must be a bool"))
        if kind == SWITCH and not isinstance(d.get(ROLE), str):
            out.append(Violation(str(n), "switch has no role"))
        if ASICS in d and (kind != SWITCH or not _is_int(d[ASICS]) or d[ASICS] < 1):
            out.append(Violation(str(n), f"asics {d[ASICS]!r} is not a positive integer on a switch"))
        if kind == CHIP:
            if not _is_int(d.get(RANK)):
                out.append(Violation(str(n), f"chip rank {d.get(RANK)!r} is not an integer"))
            else:
                ranks.append(d[RANK])
        for tag in DOMAIN_TAGS + ("x", "y", "z"):
            if tag in d and not _is_int(d[tag]):
                out.append(Violation(str(n), f"{tag} {d[tag]!r} is not an integer"))
        if G.degree(n) == 0:
            out.append(Violation(str(n), "node has no links"))
    if sorted(ranks) != list(range(len(ranks))):
        out.append(Violation("graph", f"chip ranks are not 0..{len(ranks) - 1} each once"))
    for u, v, d in G.edges(data=True):
        where = f"{u} -- {v}"
        if u == v:
            out.append(Violation(where, "self-loop"))
        if not _is_int(d.get(LANES)) or d[LANES] < 1:
            out.append(Violation(where, f"lanes {d.get(LANES)!r} is not a positive integer"))
            continue
        for key in (LANE_GBPS, PORT_GBPS, CAPACITY_GBPS, LATENCY_NS):
            val = d.get(key)
            if not isinstance(val, (int, float)) or isinstance(val, bool) or not math.isfinite(val) \
                    or val < 0 or (key != LATENCY_NS and val == 0):
                # NaN and inf are refused here: the solver cannot price an infinite or NaN link
                out.append(Violation(where, f"{key} {val!r} is not a finite "
                                            f"{'non-negative' if key == LATENCY_NS else 'positive'} number"))
                break
        else:
            lo, hi = LANE_GBPS_RANGE
            if not lo <= d[LANE_GBPS] <= hi:
                out.append(Violation(where, f"lane_gbps {d[LANE_GBPS]!r} is outside {lo:g} .. {hi:g} Gb/s"))
            if abs(d[CAPACITY_GBPS] - d[LANES] * d[LANE_GBPS]) > 1e-9 * d[CAPACITY_GBPS]:
                out.append(Violation(where, f"capacity_gbps {d[CAPACITY_GBPS]} != lanes x lane_gbps "
                                            f"= {d[LANES] * d[LANE_GBPS]}"))
            per_port = d[PORT_GBPS] / d[LANE_GBPS]
            if abs(per_port - round(per_port)) > 1e-9 or d[LANES] % max(1, round(per_port)):
                out.append(Violation(where, f"{d[LANES]} lanes of {d[LANE_GBPS]}G do not make whole "
                                            f"{d[PORT_GBPS]}G ports"))
        if d.get(MEDIUM) not in MEDIA:
            out.append(Violation(where, f"medium {d.get(MEDIUM)!r} is not one of {', '.join(MEDIA)}"))
        if not isinstance(d.get(TIER), str):
            out.append(Violation(where, "edge has no tier"))
    return out


def forwarding_graph(G: nx.Graph) -> nx.Graph:
    """The logical graph that traffic sees.

    Identical to ``G`` except at patch switches (``patch`` attribute): such a
    switch does not switch; each chip lane entering it leaves on the one
    far-side bundle whose node matches the chip on the ``patch`` attribute.
    The patch node is replaced by virtual edges chip -- far node carrying those
    lanes, so capacities and hop counts are exact for the patched circuits.
    The virtual edges keep ``via`` (the patch node) for reporting and ``hops=2``
    (the physical links they stand for) for hop counts.
    """
    patches = [n for n, d in G.nodes(data=True) if d.get(PATCH)]
    if not patches:
        return G
    H = G.copy()
    for p in patches:
        key = G.nodes[p][PATCH]
        near = [n for n in G[p] if G.nodes[n].get(KIND) == CHIP]
        far = [n for n in G[p] if G.nodes[n].get(KIND) != CHIP]
        by_value: dict[Any, list] = {}
        for f in far:
            by_value.setdefault(G.nodes[f].get(key), []).append(f)
        for c in near:
            targets = by_value.get(G.nodes[c].get(key), [])
            if not targets:
                continue
            e = G.edges[c, p]
            # a circuit keeps its own width when a far-side switch dies: use the edge's
            # circuit_lanes where the builder recorded it, not lanes / surviving targets
            lanes_each = int(e.get("circuit_lanes", e[LANES] // len(targets)))
            for f in targets:
                if lanes_each < 1 or H.has_edge(c, f):
                    continue
                fe = G.edges[p, f]
                add_bundle(H, c, f, lanes=lanes_each, lane_gbps=min(e[LANE_GBPS], fe[LANE_GBPS]),
                           port_gbps=min(e[LANE_GBPS], fe[LANE_GBPS]) * lanes_each, medium=fe[MEDIUM],
                           tier=fe[TIER], latency_ns=e[LATENCY_NS] + fe[LATENCY_NS], via=str(p),
                           hops=2)  # a patched circuit still crosses two physical links
        H.remove_node(p)
    return H
