"""Generic fabric builders: pure functions that return a fresh ``nx.Graph`` passing
:func:`fabricsim.topo.contract.validate`.

Builders
--------
torus(dims, *, ...)
    n-dimensional torus of forwarding chips (TPU ICI style), ``routing="dor"``.

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
from itertools import product

import networkx as nx

from .contract import CHIP, SWITCH, add_bundle
from .devices import Device, device, register_device

__all__ = ["torus", "GENERIC_CHIP", "GENERIC_SWITCH", "AXES", "torus_node_id"]

# Placeholder devices (I): budget-free stand-ins, not real parts.
GENERIC_CHIP = register_device(Device(
    name="generic-chip", kind="chip", lanes=4096, lane_gbps=800.0,
    description="placeholder chip with an unlimited-in-practice lane budget (4,096 lanes x 800G)",
    source="fabricsim placeholder (I): pass chip_model= for a real budget"))
GENERIC_SWITCH = register_device(Device(
    name="generic-switch", kind="switch", lanes=4096, lane_gbps=800.0, latency_ns=300.0,
    description="placeholder switch with an unlimited-in-practice lane budget (4,096 lanes x 800G)",
    source="fabricsim placeholder (I): pass switch_model= for a real budget"))

# Names of the ring-position attributes of a torus chip, slowest dimension first.
AXES = ("x", "y", "z", "w")


def _check_model(name: str, param: str, kind: str) -> Device:
    try:
        dev = device(name)
    except ValueError as exc:
        raise ValueError(f"{param}={name!r}: {exc}") from None
    if dev.kind != kind:
        raise ValueError(f"{param}={name!r} is a {dev.kind}; choose a {kind} device")
    return dev


def _positive(name: str, value, *, minimum=1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ValueError(f"{name}={value!r} must be a number >= {minimum}")


def _link_rate(lanes_per_link: int, lane_gbps: float, link_gbps: float | None) -> tuple[int, float]:
    """(lanes, lane_gbps) of one link from either the lane pair or a whole-link rate."""
    if isinstance(lanes_per_link, bool) or not isinstance(lanes_per_link, int) or lanes_per_link < 1:
        raise ValueError(f"lanes_per_link={lanes_per_link!r} must be an integer >= 1")
    if link_gbps is not None:
        if not link_gbps > 0:
            raise ValueError(f"link_gbps={link_gbps!r} must be > 0")
        return lanes_per_link, float(link_gbps) / lanes_per_link
    if not lane_gbps > 0:
        raise ValueError(f"lane_gbps={lane_gbps!r} must be > 0")
    return lanes_per_link, float(lane_gbps)


def torus_node_id(coords, width: int = 2) -> str:
    """Node id of the torus chip at ``coords``: ``"c03.04.05"`` (zero-padded, dot-joined)."""
    return "c" + ".".join(f"{c:0{width}d}" for c in coords)


def torus(dims, *, lanes_per_link: int = 1, lane_gbps: float = 200.0, link_gbps: float | None = None,
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
    try:
        dims = tuple(dims)
    except TypeError:
        raise ValueError(f"dims={dims!r} must be a sequence of 1 to {len(AXES)} ring lengths") from None
    if not 1 <= len(dims) <= len(AXES):
        raise ValueError(f"dims={dims!r} has {len(dims)} dimensions; a torus has 1 to {len(AXES)}")
    for k in dims:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"dims={dims!r}: every ring length must be an integer >= 1, got {k!r}")
    n = math.prod(dims)
    if n < 2:
        raise ValueError(f"dims={dims!r} gives {n} chip; a torus needs at least 2 chips")
    lanes, lane_rate = _link_rate(lanes_per_link, lane_gbps, link_gbps)
    _check_model(chip_model, "chip_model", CHIP)
    if latency_ns < 0:
        raise ValueError(f"latency_ns={latency_ns!r} must be >= 0")

    width = max(2, len(str(max(dims) - 1)))
    G = nx.Graph(dims="x".join(map(str, dims)), routing="dor")
    # rank: row-major over coordinates, last dimension fastest (product() yields this order)
    for rank, coords in enumerate(product(*(range(k) for k in dims))):
        G.add_node(torus_node_id(coords, width), kind=CHIP, model=chip_model, forwards=True, rank=rank,
                   **dict(zip(AXES, coords)))
    port_gbps = lanes * lane_rate
    for coords in product(*(range(k) for k in dims)):
        u = torus_node_id(coords, width)
        for axis, k in enumerate(dims):
            if k == 1:
                continue  # a ring of one chip has no neighbour
            if k == 2 and coords[axis] == 1:
                continue  # the pair's single bundle is added from position 0
            nxt = list(coords)
            nxt[axis] = (coords[axis] + 1) % k
            # k == 2: the +1 and -1 links both reach the other chip -> one bundle, doubled lanes
            n_links = 2 if k == 2 else 1
            add_bundle(G, u, torus_node_id(nxt, width), lanes=n_links * lanes, lane_gbps=lane_rate,
                       port_gbps=port_gbps, medium=medium, tier=tier, latency_ns=latency_ns,
                       axis=AXES[axis], wrap=(k == 2 or coords[axis] == k - 1))
    return G
