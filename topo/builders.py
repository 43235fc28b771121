"""Generic fabric builders: pure functions that return a fresh ``nx.Graph`` passing
:func:`fabricsim.topo.contract.validate`.

Builders
--------
switched_domain(*, chips, planes, ...)
    Single tier: every chip one bundle to each of ``planes`` parallel switches (NVL72 rack).
leaf_spine(*, leaves, chips_per_leaf, spines, oversubscription, ...)
    Two tiers: chips under leaves, every leaf one bundle to every spine.
torus(dims, *, ...)
    n-dimensional torus of forwarding chips (TPU ICI style), ``routing="dor"``.
dragonfly(*, p, a, h, g, ...)
    Kim et al. 2008: routers in fully meshed groups, groups joined by global links.
full_mesh(*, chips, ...)
    Every chip one bundle to every other chip, single hop.
boardfly(*, chips_per_board, boards_per_group, groups, ...)
    A dragonfly whose "router" is a board of chips in a ring (TPU 8i).

Every builder takes keyword-only parameters, names the parameter, its value and the
valid range in a ``ValueError`` when a value is refused, and records nothing global.
The catalog (:mod:`fabricsim.fabrics`) calls these builders with sourced numbers.

Devices
-------
Builders need a ``model`` for every node.  When the caller names none, they use two
placeholder devices registered here, ``generic-chip`` and ``generic-switch``.  Their
lane budgets are deliberately large (so any generic shape passes the validator); an
audit of lane usage against them says nothing about a real chip.  Pass your own
``chip_model`` / ``switch_model`` (see :func:`fabricsim.topo.devices.register_device`)
for a meaningful budget.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import product
from typing import Callable

import networkx as nx

from .contract import CHIP, LANE_GBPS_RANGE, SWITCH, add_bundle, bundle_attrs
from .devices import Device, device, register_device
from .errors import BadInput, TooLarge

__all__ = ["switched_domain", "leaf_spine", "torus", "dragonfly", "full_mesh", "boardfly",
           "BUILDERS", "GENERIC_CHIP", "GENERIC_SWITCH", "AXES", "torus_node_id",
           "check_size", "check_rate", "MAX_NODES", "MAX_LINKS", "LANE_GBPS_RANGE", "global_pairs"]

# Size cap, checked from a closed-form count before anything is built (I): a graph past it
# takes minutes and GBs to build and far longer to audit or route, so it is refused with the
# estimate instead of hanging.  Callers that really want one may raise these module constants.
MAX_NODES = 1_000_000
MAX_LINKS = 2_000_000
# Memory per element (derived: tracemalloc over build("jalapeno-pod") and torus 32x32x32 gave
# 380-530 B per edge with the contract's attributes, ~600 B per node with its attributes).
NODE_BYTES, LINK_BYTES = 600, 550

# Placeholder devices (I): budget-free stand-ins, not real parts.
GENERIC_CHIP = register_device(Device(
    name="generic-chip", kind="chip", lanes=4096, lane_gbps=800.0, placeholder=True,
    description="placeholder chip with an unlimited-in-practice lane budget (4,096 lanes x 800G)",
    source="fabricsim placeholder (I): pass chip_model= for a real budget"))
GENERIC_SWITCH = register_device(Device(
    name="generic-switch", kind="switch", lanes=4096, lane_gbps=800.0, latency_ns=300.0, placeholder=True,
    description="placeholder switch with an unlimited-in-practice lane budget (4,096 lanes x 800G)",
    source="fabricsim placeholder (I): pass switch_model= for a real budget"))

# Names of the ring-position attributes of a torus chip, slowest dimension first.
AXES = ("x", "y", "z", "w")


def _check_model(name: str, param: str, kind: str) -> Device:
    try:
        dev = device(name)
    except ValueError as exc:
        raise BadInput(f"{param}={name!r}: {exc}") from None
    if dev.kind != kind:
        raise BadInput(f"{param}={name!r} is a {dev.kind}; choose a {kind} device")
    return dev


def _big(n: int) -> str:
    """``1,234,567``, or ``~10^40`` when the count is too long to read."""
    return f"{n:,}" if n < 10**15 else f"~10^{len(str(n)) - 1}"


# Builds past this many nodes + links take seconds (I: build("torus", dims=(1000, 1000)), 3,000,000 elements,
# took 17 s on one core of the 2-core test machine, ~6 us each); they are announced through `building`.
ANNOUNCE_ELEMENTS = 300_000
_REPORT: ContextVar[Callable[[str], None] | None] = ContextVar("fabricsim_build_report", default=None)


def announcer(G: nx.Graph, say: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """``say`` where ``G`` is past :data:`ANNOUNCE_ELEMENTS` nodes + links (each slow step there takes seconds
    and is said before it starts), else None: small fabrics print nothing extra."""
    return say if say is not None and G.number_of_nodes() + G.number_of_edges() > ANNOUNCE_ELEMENTS else None


@contextmanager
def building(progress: Callable[[str], None] | None):
    """Within the block, :func:`check_size` says a build past :data:`ANNOUNCE_ELEMENTS` through ``progress``
    (its size, before the seconds it takes), so a long build is never silent; ``None``: quiet.

    Examples
    --------
    >>> with building(print):
    ...     check_size("a 700x700 torus", nodes=490_000, links=980_000)
    building a 700x700 torus: 490,000 nodes and 980,000 links ...
    """
    token = _REPORT.set(progress)
    try:
        yield
    finally:
        _REPORT.reset(token)


def check_size(what: str, *, nodes: int, links: int) -> None:
    """Refuse (:class:`TooLarge`) a fabric whose node or link count exceeds the cap.

    ``nodes`` and ``links`` are closed-form counts computed before building, so a
    ``--set racks=2000`` or ``dims=2000x2000`` is refused at once with its estimate.
    A large build inside :func:`building` is announced through its ``progress``.

    Examples
    --------
    >>> check_size("torus 2000x2000", nodes=4_000_000, links=8_000_000)
    Traceback (most recent call last):
    ...
    fabricsim.topo.errors.TooLarge: torus 2000x2000 would have 4,000,000 nodes and 8,000,000 links (~6.3 GiB to build); the cap is 1,000,000 nodes and 2,000,000 links
    """
    nodes, links = int(nodes), int(links)
    if nodes <= MAX_NODES and links <= MAX_LINKS:
        report = _REPORT.get()
        if report is not None and nodes + links > ANNOUNCE_ELEMENTS:
            report(f"building {what}: {nodes:,} nodes and {links:,} links ...")
        return
    gib = (nodes * NODE_BYTES + links * LINK_BYTES) * 10 // 2**30
    mem = f"~{gib // 10:,}.{gib % 10}" if gib < 10**15 else _big(gib // 10)
    raise TooLarge(f"{what} would have {_big(nodes)} nodes and {_big(links)} links ({mem} GiB to build); "
                   f"the cap is {MAX_NODES:,} nodes and {MAX_LINKS:,} links")


def check_rate(name: str, value, *, unit: str = "Gb/s", scale: float = 1.0) -> float:
    """A finite per-direction rate inside :data:`LANE_GBPS_RANGE` (``scale`` converts to Gb/s).

    ``check_rate("link_GBps", 90, unit="GB/s", scale=8)`` checks a GB/s figure.
    """
    lo, hi = (r / scale for r in LANE_GBPS_RANGE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise BadInput(f"{name}={value!r} is out of range; valid: a finite rate {lo:g} .. {hi:g} {unit}")
    return float(value)


def _latency(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BadInput(f"{name}={value!r} must be a finite number >= 0 (ns)")
    return float(value)


def _positive(name: str, value, *, minimum=1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise BadInput(f"{name}={value!r} must be a number >= {minimum}")


def _link_rate(lanes_per_link: int, lane_gbps: float, link_gbps: float | None) -> tuple[int, float]:
    """(lanes, lane_gbps) of one link from either the lane pair or a whole-link rate."""
    if isinstance(lanes_per_link, bool) or not isinstance(lanes_per_link, int) or lanes_per_link < 1:
        raise BadInput(f"lanes_per_link={lanes_per_link!r} must be an integer >= 1")
    if link_gbps is not None:
        return lanes_per_link, check_rate("link_gbps", link_gbps) / lanes_per_link
    return lanes_per_link, check_rate("lane_gbps", lane_gbps)


def torus_node_id(coords, width: int = 2) -> str:
    """Node id of the torus chip at ``coords``: ``"c03.04.05"`` (zero-padded, dot-joined)."""
    return "c" + ".".join(f"{c:0{width}d}" for c in coords)


def torus(dims: tuple[int, ...], *, lanes_per_link: int = 1, lane_gbps: float = 200.0, link_gbps: float | None = None,
          chip_model: str = "generic-chip", medium: str = "copper", tier: str = "ici",
          latency_ns: float = 5.0) -> nx.Graph:
    """An n-dimensional torus (1 to 4 dimensions) of forwarding chips.

    Parameters
    ----------
    dims : sequence of int
        Ring length per dimension, slowest first: ``(8, 12, 12)``.  Each at least 1.
    lanes_per_link : int
        Lanes in one link between ring neighbours.
    lane_gbps : float
        Data rate of one lane, per direction, Gb/s.
    link_gbps : float, optional
        The whole link's rate per direction; when given, each lane carries
        ``link_gbps / lanes_per_link`` and ``lane_gbps`` is ignored.
    chip_model : str
        Device catalog key of every chip.
    medium, tier : str
        Edge ``medium`` and ``tier`` of every link.
    latency_ns : float
        One-way latency of one link.

    Returns
    -------
    networkx.Graph
        Chips only (``kind="chip"``, ``forwards=True``), graph attributes ``dims``
        (``"8x12x12"``) and ``routing="dor"``.

    Notes
    -----
    * Node ids: ``"c" + zero-padded coordinates joined by dots``, e.g. ``"c03.04.05"``;
      the width is ``max(2, digits of the longest ring - 1)``, the same for every axis.
    * Chip attributes: ring positions ``x``, ``y``, ``z``, ``w`` for dimensions 0..3
      (``x`` is ``dims[0]``) and ``rank`` = row-major index of the coordinates with
      ``x`` slowest and the last dimension fastest (``numpy.ravel_multi_index`` order).
    * Edge attributes: the contract's bundle fields plus ``axis`` (``"x"``...) and
      ``wrap`` (``True`` on the bundle closing the ring, position k-1 to 0).
    * A ring of length 1 adds no link.  A ring of length 2 has its +1 and -1
      neighbours on the same chip: the two physical links become ONE bundle with
      ``2 * lanes_per_link`` lanes (``port_gbps`` stays one link's rate, so the
      bundle is two ports).  Nothing is dropped (networkx's ``grid_2d_graph``
      drops it).  Counting physical links, a torus of N chips has
      ``N * (number of dims with k > 1)`` links and
      ``N * #(k >= 3) + N / 2 * #(k == 2)`` bundles (edges).
    * Every chip has ``2 * lanes_per_link`` lanes per dimension with ``k > 1``.
    * Hop diameter: ``sum(k // 2)``.

    Examples
    --------
    >>> G = torus((4, 2, 1))
    >>> G.number_of_nodes(), G.number_of_edges(), G.graph["dims"]
    (8, 12, '4x2x1')
    >>> G.edges["c00.00.00", "c00.01.00"]["lanes"]
    2
    """
    if isinstance(dims, str):   # tuple("8x8") would be its characters
        raise BadInput(f"dims={dims!r} is a string; give ring lengths as a sequence, e.g. (8, 8, 8) "
                       f"(files and --set spell them 8x8x8)")
    try:
        dims = tuple(dims)
    except TypeError:
        raise BadInput(f"dims={dims!r} must be a sequence of 1 to {len(AXES)} ring lengths") from None
    if not 1 <= len(dims) <= len(AXES):
        raise BadInput(f"dims={dims!r} has {len(dims)} dimensions; a torus has 1 to {len(AXES)}")
    for k in dims:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BadInput(f"dims={dims!r}: every ring length must be an integer >= 1, got {k!r}")
    n = math.prod(dims)
    if n < 2:
        raise BadInput(f"dims={dims!r} gives {n} chip; a torus needs at least 2 chips")
    check_size(f"a {'x'.join(map(str, dims))} torus", nodes=n,
               links=sum(n if k > 2 else n // 2 for k in dims if k > 1))
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, link_gbps)
    _check_model(chip_model, "chip_model", CHIP)
    _latency("latency_ns", latency_ns)

    width = max(2, len(str(max(dims) - 1)))
    G = nx.Graph(dims="x".join(map(str, dims)), routing="dor")
    # rank: row-major over coordinates, last dimension fastest (product() yields this order)
    positions = list(product(*(range(k) for k in dims)))
    ids = [torus_node_id(coords, width) for coords in positions]
    for rank, coords in enumerate(positions):
        G.add_node(ids[rank], kind=CHIP, model=chip_model, forwards=True, rank=rank, **dict(zip(AXES, coords)))
    port_gbps = lanes * lane_rate
    strides = [math.prod(dims[a + 1:]) for a in range(len(dims))]
    edges = []
    for rank, coords in enumerate(positions):
        for axis, k in enumerate(dims):
            if k == 1:
                continue  # a ring of one chip has no neighbour
            c = coords[axis]
            if k == 2 and c == 1:
                continue  # the pair's single bundle is added from position 0
            nxt = rank + ((c + 1) % k - c) * strides[axis]
            # k == 2: the +1 and -1 links both reach the other chip -> one bundle, doubled lanes
            n_links = 2 if k == 2 else 1
            edges.append((ids[rank], ids[nxt], bundle_attrs(
                lanes=n_links * lanes, lane_gbps=lane_rate, port_gbps=port_gbps, medium=medium, tier=tier,
                latency_ns=latency_ns, axis=AXES[axis], wrap=(k == 2 or c == k - 1))))
    G.add_edges_from(edges)
    return G


# --- shared checks and helpers ------------------------------------------------------------

def _int(name: str, value, minimum: int = 1, maximum: int | None = None) -> int:
    """Check an integer parameter; the message names it, its value and the valid range."""
    rng = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{name}={value!r} must be an integer {rng}")
    if value < minimum or (maximum is not None and value > maximum):
        raise BadInput(f"{name}={value} is out of range; valid: {rng}")
    return value


def _width(n: int) -> int:
    """Digits for zero-padded ids of 0..n-1 (at least 2)."""
    return max(2, len(str(max(n - 1, 0))))


def _links(G: nx.Graph, u, v, *, links: int, lanes_per_link: int, lane_gbps: float, medium: str,
           tier: str, latency_ns: float, **tags) -> None:
    """Add ``links`` parallel links of ``lanes_per_link`` lanes between u and v.

    A second call for the same pair widens the existing bundle (one edge per bundle):
    its lanes and capacity grow, its ports stay ``lanes_per_link`` lanes wide.
    """
    if G.has_edge(u, v):
        e = G.edges[u, v]
        e["lanes"] += links * lanes_per_link
        e["capacity_gbps"] = e["lanes"] * e["lane_gbps"]
        return
    add_bundle(G, u, v, lanes=links * lanes_per_link, lane_gbps=lane_gbps,
               port_gbps=lanes_per_link * lane_gbps, medium=medium, tier=tier, latency_ns=latency_ns,
               **tags)


def _ring(G: nx.Graph, ids: list, *, lanes_per_link: int, lane_gbps: float, medium: str, tier: str,
          latency_ns: float, **tags) -> None:
    """Close ``ids`` into a ring; a ring of 2 is one bundle of both links, a ring of 1 has none."""
    k = len(ids)
    for i in range(k if k > 2 else k - 1):
        _links(G, ids[i], ids[(i + 1) % k], links=2 if k == 2 else 1, lanes_per_link=lanes_per_link,
               lane_gbps=lane_gbps, medium=medium, tier=tier, latency_ns=latency_ns, **tags)


# --- single-tier switched domain ----------------------------------------------------------

def switched_domain(*, chips: int, planes: int, lanes_per_link: int = 1, lane_gbps: float = 200.0,
                    chip_model: str = "generic-chip", switch_model: str = "generic-switch",
                    tier: str = "local", role: str = "local", medium: str = "copper",
                    latency_ns: float = 5.0, chips_per_tray: int | None = None,
                    switches_per_tray: int | None = None, chip_prefix: str = "xpu",
                    switch_prefix: str = "sw") -> nx.Graph:
    """A single-tier switched domain: every chip has one bundle to each of ``planes`` switches.

    Parameters
    ----------
    chips : int
        Chips in the domain.
    planes : int
        Parallel switches; each chip has one link (``lanes_per_link`` lanes) to each.
    lanes_per_link, lane_gbps : int, float
        Lanes per chip-switch link and their per-direction rate (Gb/s).
    chip_model, switch_model : str
        Device catalog keys.
    tier, role, medium, latency_ns :
        Edge ``tier``/``medium``/``latency_ns`` and the switches' ``role``.
    chips_per_tray, switches_per_tray : int, optional
        When given, chips get ``tray = rank // chips_per_tray`` and switches
        ``switch_tray = plane // switches_per_tray``.
    chip_prefix, switch_prefix : str
        Node ids are ``f"{chip_prefix}{rank:02d}"`` and ``f"{switch_prefix}{plane:02d}"``
        (zero-padded to the largest index).

    Returns
    -------
    networkx.Graph
        ``chips + planes`` nodes, ``chips * planes`` bundles, ``routing="ecmp"``.
        Chips do not forward (``forwards=False``): any chip pair is two links apart.
        Every node carries ``rack=0``; switches carry ``plane``.

    Examples
    --------
    >>> G = switched_domain(chips=72, planes=18, lanes_per_link=2)
    >>> G.number_of_edges(), G.degree("sw00")
    (1296, 72)
    """
    _int("chips", chips, 2)
    _int("planes", planes, 1)
    check_size(f"a switched domain of {chips:,} chips x {planes:,} planes", nodes=chips + planes,
               links=chips * planes)
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, None)
    _latency("latency_ns", latency_ns)
    _check_model(chip_model, "chip_model", CHIP)
    sw = _check_model(switch_model, "switch_model", SWITCH)
    if chips_per_tray is not None:
        _int("chips_per_tray", chips_per_tray, 1, chips)
    if switches_per_tray is not None:
        _int("switches_per_tray", switches_per_tray, 1, planes)
    G = nx.Graph(routing="ecmp")
    cw, sw_w = _width(chips), _width(planes)
    chip_ids = []
    for i in range(chips):
        cid = f"{chip_prefix}{i:0{cw}d}"
        tags = {"tray": i // chips_per_tray} if chips_per_tray else {}
        G.add_node(cid, kind=CHIP, model=chip_model, forwards=False, rank=i, rack=0, **tags)
        chip_ids.append(cid)
    for j in range(planes):
        sid = f"{switch_prefix}{j:0{sw_w}d}"
        tags = {"switch_tray": j // switches_per_tray} if switches_per_tray else {}
        G.add_node(sid, kind=SWITCH, model=switch_model, role=role, forwards=True, rack=0, plane=j,
                   latency_ns=sw.latency_ns, **tags)
        for cid in chip_ids:
            _links(G, cid, sid, links=1, lanes_per_link=lanes, lane_gbps=lane_rate, medium=medium,
                   tier=tier, latency_ns=latency_ns)
    return G


# --- two-tier leaf-spine ------------------------------------------------------------------

def leaf_spine(*, leaves: int, chips_per_leaf: int, spines: int, oversubscription: float = 1.0,
               lanes_per_link: int = 1, lane_gbps: float = 200.0, chip_model: str = "generic-chip",
               leaf_model: str = "generic-switch", spine_model: str = "generic-switch",
               down_medium: str = "copper", up_medium: str = "optical", latency_ns: float = 5.0,
               up_latency_ns: float = 50.0) -> nx.Graph:
    """Chips under leaves, every leaf one bundle to every spine.

    Parameters
    ----------
    leaves, chips_per_leaf, spines : int
    oversubscription : float
        Leaf down:up bandwidth ratio (1 = non-blocking, 2 = half the bandwidth up).
        The uplink bundle to each spine gets
        ``chips_per_leaf * lanes_per_link / (oversubscription * spines)`` lanes, which
        must be a whole number; the error lists the ratios that are.
    lanes_per_link, lane_gbps : int, float
        Lanes of one chip-leaf link and the per-direction lane rate (Gb/s); uplinks
        use the same lane rate, and ports of ``lanes_per_link`` lanes.
    chip_model, leaf_model, spine_model : str
        Device catalog keys.
    down_medium, up_medium, latency_ns, up_latency_ns :
        Medium and link latency of the chip-leaf and leaf-spine tiers.

    Returns
    -------
    networkx.Graph
        Node ids ``"leaf03/xpu07"``, ``"leaf03"``, ``"spine01"``; leaves have role
        ``leaf``, spines ``spine``; chips do not forward.  ``rank = leaf *
        chips_per_leaf + slot``; chips and their leaf carry ``rack = leaf`` (a leaf is
        a top-of-rack switch).  Edge tiers ``leaf`` (chip-leaf) and ``spine``.

    Examples
    --------
    >>> G = leaf_spine(leaves=4, chips_per_leaf=8, spines=2, oversubscription=2.0)
    >>> G.edges["leaf00", "spine00"]["lanes"]
    2
    """
    _int("leaves", leaves, 1)
    _int("chips_per_leaf", chips_per_leaf, 1)
    _int("spines", spines, 1)
    check_size(f"a leaf-spine of {leaves:,} leaves x {chips_per_leaf:,} chips, {spines:,} spines",
               nodes=leaves * (chips_per_leaf + 1) + spines, links=leaves * (chips_per_leaf + spines))
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, None)
    _latency("latency_ns", latency_ns)
    _latency("up_latency_ns", up_latency_ns)
    _check_model(chip_model, "chip_model", CHIP)
    leaf_dev = _check_model(leaf_model, "leaf_model", SWITCH)
    spine_dev = _check_model(spine_model, "spine_model", SWITCH)
    if leaves * chips_per_leaf < 2:
        raise BadInput(f"leaves={leaves} x chips_per_leaf={chips_per_leaf} gives 1 chip; need at least 2")
    down = chips_per_leaf * lanes  # lanes facing the chips on one leaf
    if not oversubscription > 0:
        raise BadInput(f"oversubscription={oversubscription!r} must be > 0")
    up_each = down / (oversubscription * spines)
    if abs(up_each - round(up_each)) > 1e-9 or round(up_each) < 1:
        valid = [down / (spines * k) for k in range(1, down // spines + 1) if down % (spines * k) == 0]
        raise BadInput(f"oversubscription={oversubscription} gives {up_each:g} lanes per leaf-spine bundle; "
                         f"it must be whole: valid ratios for {down} down lanes and {spines} spines: "
                         f"{', '.join(f'{r:g}' for r in sorted(valid))}")
    up_each = round(up_each)
    G = nx.Graph(routing="ecmp", oversubscription=float(oversubscription))
    lw, cw, sw_w = _width(leaves), _width(chips_per_leaf), _width(spines)
    spine_ids = [f"spine{s:0{sw_w}d}" for s in range(spines)]
    for s, sid in enumerate(spine_ids):
        G.add_node(sid, kind=SWITCH, model=spine_model, role="spine", forwards=True, plane=s,
                   latency_ns=spine_dev.latency_ns)
    for l in range(leaves):
        lid = f"leaf{l:0{lw}d}"
        G.add_node(lid, kind=SWITCH, model=leaf_model, role="leaf", forwards=True, rack=l,
                   latency_ns=leaf_dev.latency_ns)
        for c in range(chips_per_leaf):
            cid = f"{lid}/xpu{c:0{cw}d}"
            G.add_node(cid, kind=CHIP, model=chip_model, forwards=False, rank=l * chips_per_leaf + c, rack=l)
            _links(G, cid, lid, links=1, lanes_per_link=lanes, lane_gbps=lane_rate, medium=down_medium,
                   tier="leaf", latency_ns=latency_ns)
        for sid in spine_ids:
            # the uplink bundle: ports as wide as a chip link, up_each lanes in all
            add_bundle(G, lid, sid, lanes=up_each, lane_gbps=lane_rate,
                       port_gbps=(lanes if up_each % lanes == 0 else 1) * lane_rate, medium=up_medium,
                       tier="spine", latency_ns=up_latency_ns)
    return G


# --- full mesh ----------------------------------------------------------------------------

def full_mesh(*, chips: int, lanes_per_link: int = 1, lane_gbps: float = 200.0,
              chip_model: str = "generic-chip", medium: str = "copper", tier: str = "mesh",
              latency_ns: float = 5.0) -> nx.Graph:
    """Every chip one bundle to every other chip.

    Chips do not forward (``forwards=False``): every pair is one link apart and the
    mesh is routed single hop (``routing="ecmp"`` finds exactly the direct link).
    Node ids ``"xpu00"`` ..., ``rank`` = index; ``chips * (chips - 1) / 2`` bundles.

    Examples
    --------
    >>> full_mesh(chips=8).number_of_edges()
    28
    """
    _int("chips", chips, 2)
    check_size(f"a full mesh of {chips:,} chips", nodes=chips, links=chips * (chips - 1) // 2)
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, None)
    _latency("latency_ns", latency_ns)
    _check_model(chip_model, "chip_model", CHIP)
    w = _width(chips)
    ids = [f"xpu{i:0{w}d}" for i in range(chips)]
    G = nx.Graph(routing="ecmp")
    for i, cid in enumerate(ids):
        G.add_node(cid, kind=CHIP, model=chip_model, forwards=False, rank=i)
    for i in range(chips):
        for j in range(i + 1, chips):
            _links(G, ids[i], ids[j], links=1, lanes_per_link=lanes, lane_gbps=lane_rate, medium=medium,
                   tier=tier, latency_ns=latency_ns)
    return G


# --- dragonfly ----------------------------------------------------------------------------

def global_pairs(g: int, ports: int, per_pair: int):
    """The consecutive global arrangement: yield (group, port, group', port', copy) once per link.

    Port ``j = copy * (g - 1) + o`` of group ``G`` (``o`` in 0..g-2) joins group
    ``G + o + 1`` at its port ``copy * (g - 1) + (g - 2 - o)``; this pairing is an
    involution, so every pair of groups gets ``per_pair`` links and no port is used twice.
    With ``g = ports + 1`` and ``per_pair = 1`` it is Kim et al.'s arrangement: port
    ``j`` of group ``G`` reaches group ``G + j + 1``.
    """
    for G in range(g):
        for copy in range(per_pair):
            for o in range(g - 1):
                G2 = (G + o + 1) % g
                o2 = g - 2 - o
                if (G, o) < (G2, o2):
                    yield G, copy * (g - 1) + o, G2, copy * (g - 1) + o2, copy


def dragonfly(*, p: int, a: int, h: int, g: int | None = None, lanes_per_link: int = 1,
              lane_gbps: float = 200.0, router_model: str = "generic-switch",
              chip_model: str = "generic-chip", local_medium: str = "copper",
              global_medium: str = "optical", latency_ns: float = 5.0,
              global_latency_ns: float = 50.0) -> nx.Graph:
    """A dragonfly (Kim, Dally, Scott, Abts, ISCA 2008).

    Parameters
    ----------
    p : int
        Terminals (chips) per router.
    a : int
        Routers per group; the routers of a group are fully meshed.
    h : int
        Global links per router.
    g : int, optional
        Groups, 1..a*h+1 (``a * h + 1`` by default: the largest, one global link
        between every pair of groups).  With fewer groups each pair of groups gets
        ``floor(a * h / (g - 1))`` global links and the rest of the ports stay unused.
    lanes_per_link, lane_gbps :
        Lanes per link (terminal, local and global alike) and their per-direction rate.
    router_model, chip_model : str
        Device catalog keys.

    Returns
    -------
    networkx.Graph
        Routers ``"g03/r05"`` (role ``router``, ``group``), terminals ``"g03/r05/t2"``
        (``forwards=False``, ``group``, ``rank`` in (group, router, terminal) order).
        Edge tiers ``terminal``, ``local``, ``global``; ``routing="ecmp"``.

    Notes
    -----
    Global links use the consecutive arrangement (see ``global_pairs``): global port
    ``j`` of a group belongs to router ``j // h``.  With ``g = a*h + 1`` every pair of
    groups has exactly one link, so a minimal route is at most local, global, local:
    3 router-to-router hops (5 links terminal to terminal).  Where two links of one
    group pair join the same two routers they are one bundle of both.  The balanced
    configuration is ``a = 2p = 2h``.

    Examples
    --------
    >>> G = dragonfly(p=2, a=4, h=2)
    >>> sum(d["kind"] == "chip" for _, d in G.nodes(data=True)), G.graph["groups"]
    (72, 9)
    """
    _int("p", p, 1)
    _int("a", a, 1)
    _int("h", h, 1)
    g_max = a * h + 1
    g = g_max if g is None else _int("g", g, 1, g_max)
    check_size(f"a dragonfly p={p}, a={a}, h={h}, g={g}", nodes=g * a * (p + 1),
               links=g * a * p + g * a * (a - 1) // 2 + g * a * h // 2)
    _latency("latency_ns", latency_ns)
    _latency("global_latency_ns", global_latency_ns)
    if g * a * p < 2:
        raise BadInput(f"p={p}, a={a}, g={g} gives 1 terminal; need at least 2")
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, None)
    _check_model(chip_model, "chip_model", CHIP)
    rdev = _check_model(router_model, "router_model", SWITCH)
    gw, aw, pw = _width(g), _width(a), len(str(max(p - 1, 0)))
    per_pair = a * h // (g - 1) if g > 1 else 0
    G = nx.Graph(routing="ecmp", groups=g, links_per_group_pair=per_pair)
    kw = dict(lanes_per_link=lanes, lane_gbps=lane_rate)

    def rid(grp, r):
        return f"g{grp:0{gw}d}/r{r:0{aw}d}"

    rank = 0
    for grp in range(g):
        for r in range(a):
            G.add_node(rid(grp, r), kind=SWITCH, model=router_model, role="router", forwards=True,
                       group=grp, latency_ns=rdev.latency_ns)
            for t in range(p):
                tid = f"{rid(grp, r)}/t{t:0{pw}d}"
                G.add_node(tid, kind=CHIP, model=chip_model, forwards=False, rank=rank, group=grp)
                rank += 1
                _links(G, tid, rid(grp, r), links=1, medium=local_medium, tier="terminal",
                       latency_ns=latency_ns, **kw)
        for r in range(a):
            for r2 in range(r + 1, a):
                _links(G, rid(grp, r), rid(grp, r2), links=1, medium=local_medium, tier="local",
                       latency_ns=latency_ns, **kw)
    for G1, j1, G2, j2, _ in global_pairs(g, a * h, per_pair):
        _links(G, rid(G1, j1 // h), rid(G2, j2 // h), links=1, medium=global_medium, tier="global",
               latency_ns=global_latency_ns, **kw)
    return G


# --- boardfly: a dragonfly of boards ------------------------------------------------------

def _chip_ports(ports_per_board: int, chips_per_board: int) -> list[int]:
    """External ports per chip: spread as evenly as the count allows, first chips first."""
    q, r = divmod(ports_per_board, chips_per_board)
    return [q + (c < r) for c in range(chips_per_board)]


def _board_ports(*, chips_per_board: int, boards_per_group: int, ports_per_board: int,
                 links_per_group_pair: int, port_placement: str):
    """Where a board's external ports sit.

    Returns ``(copper, tuples)``: ``copper(b, b2)`` is the chip of board ``b`` holding
    its link to board ``b2`` of the same group, and ``tuples`` lists the group's global
    port tuples, each ``links_per_group_pair`` slots ``(board, chip)``, in the order
    they are handed to group pairs (see :func:`boardfly`).
    """
    C, B, m = chips_per_board, boards_per_group, links_per_group_pair
    cap = _chip_ports(ports_per_board, C)
    if port_placement == "naive":
        # ports filled in order: chip 0 takes ports 0..3, chip 1 the next...; copper ports
        # first (toward boards in index order), then the global ports
        chip_of = [c for c in range(C) for _ in range(cap[c])]

        def copper(b, b2):
            return chip_of[b2 if b2 < b else b2 - 1]
        slots = [(b, chip_of[q]) for b in range(B) for q in range(B - 1, ports_per_board)]
        return copper, [tuple(slots[i:i + m]) for i in range(0, len(slots) - m + 1, m)]

    def copper(b, b2):
        # board b's link toward the board k ahead sits on chip k mod C: the 7 links of a
        # board spread over all its chips, and a board's links toward boards s apart
        # (s = C/2) sit on antipodal chips of the ring
        return ((b2 - b) % B) % C
    used = [0] * C
    for k in range(1, B):
        used[k % C] += 1
    free = [cap[c] - used[c] for c in range(C)]
    if min(free) < 0:
        raise BadInput(f"port_placement='spread' puts {max(used)} board-to-board links on one chip but "
                         f"ports_per_board={ports_per_board} gives chips {min(cap)}..{max(cap)} ports; "
                         f"use more ports or port_placement='naive'")
    # a global tuple takes the same chip on boards s apart, so the links of one group pair
    # leave from boards whose copper links land on antipodal chips of every other board
    s = (C // 2) % B or (1 % B)
    order, seen = [], set()
    for start in range(B):
        b = start
        while b not in seen:
            seen.add(b)
            order.append(b)
            b = (b + s) % B
    per_chip, pool = [], []
    for c in range(C):
        slots = [(b, c) for _ in range(free[c]) for b in order]
        full = len(slots) - len(slots) % m
        per_chip.append([tuple(slots[i:i + m]) for i in range(0, full, m)])
        pool += slots[full:]
    per_chip.append([tuple(pool[i:i + m]) for i in range(0, len(pool) - m + 1, m)])
    # hand tuples out round-robin over chips, so a few groups still spread over boards
    tuples = []
    for i in range(max(map(len, per_chip))):
        tuples += [lst[i] for lst in per_chip if i < len(lst)]
    return copper, tuples


def boardfly(*, chips_per_board: int = 4, boards_per_group: int = 8, groups: int = 36,
             ports_per_board: int = 16, links_per_group_pair: int = 2, lanes_per_link: int = 8,
             lane_gbps: float = 200.0, port_placement: str = "spread", chip_model: str = "generic-chip",
             tier: str = "ici", ring_latency_ns: float = 2.0, copper_latency_ns: float = 5.0,
             optical_latency_ns: float = 50.0) -> nx.Graph:
    """A dragonfly whose router is a board of chips in a ring (Boardfly, TPU 8i).

    Parameters
    ----------
    chips_per_board : int
        Chips on a board, joined in a ring (pcb).  A ring of 2 is one bundle of both links.
    boards_per_group : int
        Boards in a group, fully meshed by one copper link per pair of boards.
    groups : int
        Groups, joined by ``links_per_group_pair`` optical links per pair of groups;
        1 up to ``1 + (boards_per_group * (ports_per_board - boards_per_group + 1))
        // links_per_group_pair`` (the global ports of a group).
    ports_per_board : int
        External ports of a board (copper + optical), spread over its chips as evenly
        as possible (4 per chip for 16 ports on 4 chips).
    links_per_group_pair : int
        Optical links between every pair of groups.
    lanes_per_link, lane_gbps :
        Lanes of every link and their per-direction rate (Gb/s).
    port_placement : ``"spread"`` | ``"naive"``
        Which chip of a board holds each external port.  ``spread``: the link toward the
        board ``k`` ahead sits on chip ``k mod chips_per_board``, and the links of one
        group pair leave from the same chip of boards ``chips_per_board / 2`` apart (see
        Notes).  ``naive``: ports filled in order, chip 0 first, board links before
        optical links.
    chip_model : str
        Device catalog key of every chip.
    tier : str
        Edge ``tier`` of every link (one tier: a chip's ports serve ring, board and
        group links alike, so a per-tier lane budget would differ chip by chip).
    ring_latency_ns, copper_latency_ns, optical_latency_ns : float
        Link latencies of the three kinds of link.

    Returns
    -------
    networkx.Graph
        Chips only, all forwarding; ids ``"g03/b5/c2"`` (group, board in group, chip on
        board); ``rank = (group * boards_per_group + board) * chips_per_board + chip``;
        attributes ``group`` and ``board`` (a global board index, unique across groups).
        Edges carry ``span``: ``board`` (the pcb ring), ``group`` (copper between boards),
        ``global`` (optical between groups, with an ``ocs`` tag).  ``routing="ecmp"``.

    Notes
    -----
    Optical circuit switches are passive: an inter-group link is one direct chip-to-chip
    edge.  Its ``ocs`` tag (I, layout not published) puts the links of group-pair offsets
    ``o`` and ``g - 2 - o`` of one copy on one switch: ``copy * (g // 2) + min(o, g-2-o)``.

    Global arrangement: each group's port tuples ``T_0, T_1, ...`` (each one slot per
    copy) are handed out consecutively: group ``G`` reaches group ``G + o + 1`` with
    tuple ``T_o``, arriving at tuple ``T_{g-2-o}`` there (Kim et al.'s consecutive
    arrangement, one tuple per group pair).

    Why ``spread`` gives 7 hops (4 chips, 8 boards, 2 links per group pair): a route is
    ring + copper + [ring] + optical + [ring] + copper + ring.  The two links of a group
    pair leave from boards 2 apart, so from any other board their copper links start on
    antipodal chips: one of them is at most 1 ring hop from any source chip, and the
    same holds at the destination, so the end rings cost at most 2 together.  The
    bracketed middle rings cost at most 1 each; checked exhaustively for every pair of
    tuples, and the tests verify the diameter of the built graph.

    Examples
    --------
    >>> G = boardfly(groups=3)
    >>> G.number_of_nodes(), G.graph["links_per_group_pair"]
    (96, 2)
    """
    C = _int("chips_per_board", chips_per_board, 1)
    P = _int("ports_per_board", ports_per_board, 0)
    B = _int("boards_per_group", boards_per_group, 1, P + 1)
    m = _int("links_per_group_pair", links_per_group_pair, 1)
    global_ports = B * (P - (B - 1))
    g = _int("groups", groups, 1, 1 + global_ports // m)
    if port_placement not in ("spread", "naive"):
        raise BadInput(f"port_placement={port_placement!r}; choose one of: spread, naive")
    check_size(f"a boardfly of {g:,} groups x {B:,} boards x {C:,} chips", nodes=C * B * g,
               links=C * B * g + g * B * (B - 1) // 2 + g * (g - 1) // 2 * m)
    for key, val in (("ring_latency_ns", ring_latency_ns), ("copper_latency_ns", copper_latency_ns),
                     ("optical_latency_ns", optical_latency_ns)):
        _latency(key, val)
    if C * B * g < 2:
        raise BadInput("chips_per_board x boards_per_group x groups gives 1 chip; need at least 2")
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, None)
    _check_model(chip_model, "chip_model", CHIP)
    copper, tuples = _board_ports(chips_per_board=C, boards_per_group=B, ports_per_board=P,
                                  links_per_group_pair=m, port_placement=port_placement)
    gw, bw, cw = _width(g), len(str(B - 1)), len(str(C - 1))

    def cid(grp, b, c):
        return f"g{grp:0{gw}d}/b{b:0{bw}d}/c{c:0{cw}d}"

    G = nx.Graph(routing="ecmp", port_placement=port_placement, links_per_group_pair=m)
    kw = dict(lanes_per_link=lanes, lane_gbps=lane_rate)
    for grp in range(g):
        for b in range(B):
            ids = [cid(grp, b, c) for c in range(C)]
            for c, n in enumerate(ids):
                G.add_node(n, kind=CHIP, model=chip_model, forwards=True, rank=(grp * B + b) * C + c,
                           group=grp, board=grp * B + b)
            _ring(G, ids, medium="pcb", tier=tier, latency_ns=ring_latency_ns, span="board", **kw)
        for b in range(B):
            for b2 in range(b + 1, B):
                _links(G, cid(grp, b, copper(b, b2)), cid(grp, b2, copper(b2, b)), links=1,
                       medium="copper", tier=tier, latency_ns=copper_latency_ns, span="group", **kw)
    for grp in range(g):
        for o in range(g - 1):
            grp2, o2 = (grp + o + 1) % g, g - 2 - o
            if (grp, o) >= (grp2, o2):
                continue  # each group pair once
            for copy, ((b, c), (b2, c2)) in enumerate(zip(tuples[o], tuples[o2])):
                _links(G, cid(grp, b, c), cid(grp2, b2, c2), links=1, medium="optical", tier=tier,
                       latency_ns=optical_latency_ns, span="global", ocs=copy * (g // 2) + min(o, o2), **kw)
    return G


BUILDERS = {f.__name__: f for f in (switched_domain, leaf_spine, torus, dragonfly, full_mesh, boardfly)}
