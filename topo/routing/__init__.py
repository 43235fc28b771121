"""Routing: chip pairs -> factored sparse shares of each flow's rate on directed links.

A package of policies, one module each, dispatched by the graph's ``routing``
attribute through :data:`POLICIES` (like :mod:`networkx.algorithms.flow`):

=================  ===============================================================
module             contents
=================  ===============================================================
``core``           link table, node arrays, route parts and their assembly,
                   reachability, per-destination DAG walkers, typed records
``quotient``       :class:`Quotient` (a phase folded into symmetry classes) and
                   :class:`Fold` (a fold's quotient, or the reason it has none)
``ecmp``           policy ``ecmp``: shortest paths split per hop (equal / capacity);
                   ECMP on a link subset for the other policies; fold: twins
``cone``           ECMP pair by pair inside each pair's shortest-path cone (a few
                   pairs per destination on a big graph: a torus's rerouted pairs)
``leaf``           switched and leaf-spine tiers (factored fast paths of ECMP) and
                   the rail-only PXN relay; fold: in-rack positions
``tiered``         policy ``tiered``: Jalapeño's tier rule with relays; fold: twins,
                   then positions where routes relay
``switching``      what each catalog fabric's switches do with multipath traffic (static
                   ECMP, weighted, adaptive), with its source; the split that models it
``torus``          policy ``dor``: dimension-order torus routing; fold: translations
                   (and ``flows_through`` for the failure correction); on a degraded
                   torus the price engine then tries ``fold_stabilizer``
=================  ===============================================================

Public names
------------
LinkTable, link_table
    The directed links of :func:`~fabricsim.topo.contract.forwarding_graph` (each
    undirected bundle gives two links, one per direction) with capacity, tier,
    latency and physical hop count.
Routes, route
    ``route(G, src, dst)`` returns, for flows between chip ranks, two sparse
    factors whose product is the flows x links share matrix:
    ``(flow_piece @ piece_link)[f, l]`` is the fraction of flow ``f``'s rate on
    link ``l``.  The solver consumes the factors and never forms the product.
Loads, link_loads
    Bytes per link of a set of flows, without keeping their routes.
Policy, POLICIES, policy_of, register, unregister
    The routing policies by ``G.graph["routing"]`` name: each a router, an optional
    link-load shortcut, a symmetry fold and the properties other code asks about
    (labels it reads, generators it offers, dimension order, tier rule);
    ``policy_of(G)`` is a fabric's.  Adding a policy is one ``register(Policy(...))``.
Quotient, Fold, fold
    ``fold(G, rows, pairs)``: the policy's symmetry fold of a phase (a quotient, or
    the reason there is none).
SPLITS, TIER_MODES
    The choices of ``route``'s ``split`` (fixed per-hop shares) and ``tiers``.
SPLIT_CHOICES
    Every split a price accepts: ``SPLITS`` and ``adaptive`` (adaptive routing: each flow
    spreads over every path of its ``equal`` route's support, at the multipath max-min
    fair rates of :mod:`fabricsim.topo.multipath`; not a fixed share, so ``route`` gives
    the support and the price engine solves the rates).

Policies (``G.graph["routing"]``)
---------------------------------
``ecmp`` (:mod:`.ecmp`)
    Shortest paths in physical hops (a virtual patch edge counts its ``hops``)
    through nodes with ``forwards=True`` (the endpoints need not forward), split at
    every hop over the next hops on shortest paths: equally, or in proportion to
    the next-hop link capacity (``split="capacity"``).
``tiered`` (:mod:`.tiered`)
    Jalapeño: a pair in one rack (node attribute ``rack``) uses the ``local`` tier
    only, a pair in two racks the ``global`` tier only, each by ECMP on its tier.
    Where the global tier has no path (rail-only wiring, a failed rail) the flow
    relays: it crosses the local tier to a chip of its own rack that has a global
    path to the destination, then the global tier (NCCL PXN, Wang et al. 2023).
    ``tiers="any"`` drops the tier rule (plain ECMP, relaying only where ECMP has
    no path).
``dor`` (:mod:`.torus`)
    Dimension-order routing on a torus (attributes ``x, y, z, w`` and the graph's
    ``dims``): each dimension in turn, along the shorter arc of its ring; an arc of
    exactly half a ring splits half each way.  Pairs whose DOR path crosses a
    missing link or chip fall back to ECMP on what is left.

Factoring (why the routes stay small)
-------------------------------------
A *piece* is a set of link shares several flows have in common; a flow's row in
``flow_piece`` says how much of each piece it carries.  The routers build pieces
from structure with array arithmetic, never a Python loop per flow:

* single switched tier (Jalapeño rack, NVL72, a patched rail): the route from
  ``s`` to ``d`` crosses the switches ``C`` adjacent to both; pieces ``up(s, C)``
  and ``down(d, C)``, 2 per flow;
* leaf-spine tier (Jalapeño global tier): pieces ``up(s)`` (chip to its leaves),
  ``mid(rack profile of s, leaves of d)`` (leaf -> spine -> leaf) and ``down(d)``,
  3 per flow;
* torus DOR: one piece per ring arc (with its tie split inside), <= 1 per dimension;
  a pair whose arcs a failure broke takes one slot for its ECMP route instead;
* anything else (generic ECMP): per destination, a shortest-path DAG built in C
  with :mod:`scipy.sparse.csgraph`; pieces are the first-hop links of the source
  and the DAG from each first-hop node to the destination, shared by every
  source with that first hop; a destination with few sources (pairs a torus
  reroutes around a failure) instead gets one piece per pair, its route, walked
  inside the pair's shortest-path cone (:mod:`.cone`).

Notes
-----
Fallback order for ``tiered`` with ``tiers="rule"``: the pair's own tier; then,
for a pair in two racks, a relay through its own rack; then any shortest path
(ECMP over every tier); else unreachable (empty row).  The relay is chosen at the
source side first (the chip of the source's rack at the destination's position in
its rack, else the one with a path closest in rank to that position); when no chip
of the source's rack has a global path to the destination (it lost its global
links), at the destination side (the chip of the destination's rack at the
source's position: global leg first, then the local tier); when both ends lost
theirs, at both sides (local, global, local).  Each leg is routed by ECMP on its
tier and counted in pieces, hops and latency.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import networkx as nx
import numpy as np

from ..builders import AXES
from ..errors import BadInput
from . import cone, core, ecmp, leaf, quotient, switching, tiered, torus  # noqa: F401  (the policy modules, as attributes)
from .core import SPLITS, TIER_MODES, LinkTable, Loads, Request, Routes, _assemble, _net, link_table
from .quotient import Fold, Quotient

# every split a price accepts: the fixed shares, and adaptive (collectives.adaptive, topo.multipath)
SPLIT_CHOICES = SPLITS + ("adaptive",)

__all__ = ["LinkTable", "link_table", "Routes", "route", "Loads", "link_loads", "SPLITS", "SPLIT_CHOICES", "TIER_MODES",
           "Policy", "POLICIES", "GENERATOR_KINDS", "policy_of", "register", "unregister", "Quotient", "Fold", "fold",
           "flows_through"]

flows_through = torus.flows_through


# candidate symmetry generators a policy may offer (built in collectives.whatif.orbits, verified there):
# "torus" translations and reflections of each axis, "twins" interchangeable nodes, "labels"
# permutations of label values (racks, trays, rails ...), "leaf-rails" a Jalapeño leaf with its rails
GENERATOR_KINDS = ("torus", "twins", "labels", "leaf-rails")


@dataclass(frozen=True)
class Policy:
    """A routing policy: how it routes, how it folds a phase by symmetry, and what it reads.

    Code outside :mod:`fabricsim.topo.routing` asks a fabric's policy for a property
    (``policy_of(G).tier_rule``), never compares its name: a new policy is one
    :func:`register` call.

    Attributes
    ----------
    name : str
        The ``G.graph["routing"]`` value.
    route : callable
        ``route(net, s, d, split, tiers) -> PolicyRoutes`` for pairs of node indices
        (all present).
    fold : callable
        ``fold(G, rows, pairs, *, links, split, tiers, guard) -> Fold``.
    loads : callable, optional
        ``loads(request, bytes_per_flow, split) -> Loads`` when the policy sums link
        loads without building every route (else :func:`link_loads` routes).
    reads : tuple of str
        Node labels the routes depend on (a symmetry must map them consistently).
    graph_reads : tuple of str
        Graph attributes the routes depend on.
    generators : tuple of str
        The candidate symmetry generators the policy's routes can keep, in the order
        they are tried (a subset of :data:`GENERATOR_KINDS`).
    dimension_order : bool
        Routes by dimension order on a torus: chips are told apart by coordinates (no
        two are twins), and the translations fold.
    tier_rule : bool
        A pair in one rack stays on the ``local`` tier and a pair in two racks on the
        ``global`` tier, relaying through its own rack where that has no path: the relay
        is chosen by in-rack position, which a symmetry must keep.
    stabilizer : callable, optional
        ``stabilizer(G, rows, *, links, split, guard) -> Fold``: the fold the price engine
        tries on a degraded fabric after :attr:`fold` refused (None: no such fold).
    """

    name: str
    route: Callable
    fold: Callable
    loads: Callable | None = None
    reads: tuple[str, ...] = ()
    graph_reads: tuple[str, ...] = ()
    generators: tuple[str, ...] = ("twins", "labels")
    dimension_order: bool = False
    tier_rule: bool = False
    stabilizer: Callable | None = None

    def __post_init__(self):
        bad = [g for g in self.generators if g not in GENERATOR_KINDS]
        if bad:
            raise BadInput(f"policy {self.name!r}: generator kind {bad[0]!r} is not one of: "
                           f"{', '.join(GENERATOR_KINDS)}")


POLICIES: dict[str, Policy] = {p.name: p for p in (
    Policy("ecmp", ecmp.route_ecmp, ecmp.fold_twins),
    Policy("tiered", tiered.route_tiered, tiered.fold_tiered, reads=("rack",),
           generators=("twins", "labels", "leaf-rails"), tier_rule=True),
    Policy("dor", torus.route_dor, torus.fold_translations, torus.loads_dor, reads=AXES,
           graph_reads=("dims",), generators=("torus", "twins"), dimension_order=True,
           stabilizer=torus.fold_stabilizer),
)}


def register(policy: Policy) -> Policy:
    """Add a routing policy (a fabric selects it with ``G.graph["routing"] = policy.name``).

    Refuses a name already taken; :func:`unregister` removes it again.
    """
    if not isinstance(policy, Policy):
        raise BadInput(f"register takes a routing Policy, not {type(policy).__name__}")
    if policy.name in POLICIES:
        raise BadInput(f"routing policy {policy.name!r} is already registered; unregister it first")
    POLICIES[policy.name] = policy
    return policy


def unregister(name: str) -> Policy:
    """Remove the routing policy ``name`` (see :func:`register`) and return it."""
    try:
        return POLICIES.pop(name)
    except KeyError:
        raise BadInput(f"routing policy {name!r} is not registered; registered: {', '.join(POLICIES)}") from None


def policy_of(G: nx.Graph) -> Policy:
    """The routing policy of ``G`` (``G.graph["routing"]``, ``ecmp`` when absent).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> p = policy_of(build("torus", dims="4x4"))
    >>> p.name, p.dimension_order, p.reads
    ('dor', True, ('x', 'y', 'z', 'w'))
    """
    name = G.graph.get("routing", "ecmp")
    try:
        return POLICIES[name]
    except (KeyError, TypeError):
        raise BadInput(f"routing policy {name!r} is not one of: {', '.join(sorted(POLICIES))}") from None


def _request(G: nx.Graph, src, dst, split: str, tiers: str, links: LinkTable | None) -> Request:
    """Check a route request (a rank no chip carries maps to node -1)."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r}; choose one of: {', '.join(SPLITS)}")
    if tiers not in TIER_MODES:
        raise ValueError(f"tiers={tiers!r}; choose one of: {', '.join(TIER_MODES)}")
    policy = policy_of(G).name
    src_r = np.asarray(src)
    dst_r = np.asarray(dst)
    if src_r.shape != dst_r.shape or src_r.ndim != 1:
        raise ValueError(f"src and dst must be 1-D arrays of one length; got shapes {src_r.shape} and {dst_r.shape}")
    if len(src_r) and (not np.issubdtype(src_r.dtype, np.integer) or not np.issubdtype(dst_r.dtype, np.integer)):
        raise ValueError("src and dst must be integer chip ranks")
    src_r = src_r.astype(np.int64, copy=False)
    dst_r = dst_r.astype(np.int64, copy=False)
    same = np.flatnonzero(src_r == dst_r)
    if len(same):
        raise ValueError(f"flow {same[0]} has src == dst == {src_r[same[0]]}; a flow joins two chips")
    if len(src_r) and (min(src_r.min(), dst_r.min()) < 0):
        raise ValueError("src and dst must be chip ranks >= 0")
    lt = link_table(G) if links is None else links
    net = _net(G, lt)

    def node(r):
        if len(r) and r.max() < len(net.node_of_rank):
            return net.node_of_rank[r]          # every rank has a slot (-1 where no chip carries it)
        out = np.full(len(r), -1, np.int64)
        inside = r < len(net.node_of_rank)
        out[inside] = net.node_of_rank[r[inside]]
        return out

    return Request(policy, lt, net, src_r, dst_r, node(src_r), node(dst_r))


def route(G: nx.Graph, src, dst, *, split: Literal["equal", "capacity"] = "equal",
          tiers: Literal["rule", "any"] = "rule", links: LinkTable | None = None) -> Routes:
    """Route flows between chip ranks under the fabric's routing policy.

    Parameters
    ----------
    G : networkx.Graph
        A fabric graph (catalog, user file, or a degraded copy); ``G.graph["routing"]``
        picks the policy (``ecmp`` when absent).
    src, dst : array_like of int, shape (F,)
        Chip ranks; ``src[f] != dst[f]``.  A rank no chip carries (a failed chip)
        gives an unreachable flow.
    split : {"equal", "capacity"}
        Per-hop split over next hops: equal, or in proportion to next-hop link capacity.
    tiers : {"rule", "any"}
        ``tiered`` fabrics: keep each pair on its tier (``rule``) or allow any
        shortest path (``any``).  Ignored by the other policies.
    links : LinkTable, optional
        ``link_table(G)`` when the caller already has it (saves rebuilding it).

    Returns
    -------
    Routes

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-rack")
    >>> r = route(G, [0, 5], [1, 9])
    >>> r.shares([0]).sum(), int(r.hops[0])
    (np.float64(2.0), 2)
    """
    from ..graphcache import is_pinned, memo
    if is_pinned(G) and (links is None or links is link_table(G)):
        s_, d_ = np.asarray(src), np.asarray(dst)       # cached while G is pinned (topo.graphcache)
        key = ("route", policy_of(G).name, s_.dtype.str, s_.tobytes(), d_.dtype.str, d_.tobytes(), split, tiers)
        return memo(G, key, lambda: _routes(_request(G, src, dst, split, tiers, links), split, tiers))
    return _routes(_request(G, src, dst, split, tiers, links), split, tiers)


def _routes(req: Request, split: str, tiers: str, router: Callable | None = None) -> Routes:
    """Routes of a checked request: its policy's router (or ``router``, called the same way) on the
    pairs whose chips are present, assembled with the others (out of reach) into :class:`Routes`."""
    lt, net, src_r, dst_r, s, d = req.links, req.net, req.src_rank, req.dst_rank, req.src_node, req.dst_node
    L, F = len(lt), len(src_r)
    ok = (s >= 0) & (d >= 0)
    all_alive = bool(ok.all())
    alive = None if all_alive else np.flatnonzero(ok)
    sa, da = (s, d) if all_alive else (s[alive], d[alive])
    del ok
    got = (router or POLICIES[req.policy].route)(net, sa, da, split, tiers)
    part, relay_a, relay2_a = got.part, got.relay, got.relay2
    del sa, da, s, d, got, req
    relay_rank = np.full(F, -1, np.int32)
    if all_alive:
        fp = part.csr()
        reach, hops, lat = part.reach, part.hops.astype(np.int32, copy=False), part.lat
        if relay_a is not None:
            on = relay_a >= 0
            relay_rank[on] = net.rank[relay_a[on]]
    else:
        fp, _ = _assemble(F, L, [part], [(0, alive, np.arange(len(alive)))])
        reach = np.zeros(F, bool)
        hops = np.zeros(F, np.int32)
        lat = np.zeros(F)
        reach[alive], hops[alive], lat[alive] = part.reach, part.hops, part.lat
        if relay_a is not None:
            relay_rank[alive] = np.where(relay_a >= 0, net.rank[np.maximum(relay_a, 0)], -1)
    relay2_rank = None
    if relay2_a is not None:
        relay2_rank = np.full(F, -1, np.int32)
        where = np.flatnonzero(relay2_a >= 0)
        relay2_rank[where if all_alive else alive[where]] = net.rank[relay2_a[where]]
    if not reach.all():
        hops = np.where(reach, hops, 0).astype(np.int32)
        lat = np.where(reach, lat, 0.0)
    return Routes(lt, src_r, dst_r, fp.tocsr(), part.pl.tocsr(), reach, relay_rank >= 0, relay_rank, hops, lat,
                  relay2_rank)


def link_loads(G: nx.Graph, src, dst, bytes_per_flow, *, split: Literal["equal", "capacity"] = "equal",
               tiers: Literal["rule", "any"] = "rule", links: LinkTable | None = None) -> Loads:
    """Bytes each link carries when flow ``f`` moves ``bytes_per_flow[f]`` along its routes.

    The same routes as :func:`route`, summed without keeping them: on a torus, the
    pairs whose dimension-order path a failure broke take per-hop ECMP computed by
    pushing each destination's demand down its shortest-path DAG, so thousands of
    rerouted destinations cost O(links) each instead of a piece per first hop.  This
    is what a link-load bound needs; max-min rates need :func:`route`'s pieces.

    Parameters
    ----------
    G, src, dst, split, tiers, links
        As in :func:`route`.
    bytes_per_flow : float or array_like, shape (F,)

    Returns
    -------
    Loads

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims="4x4")
    >>> float(link_loads(G, [0, 1], [2, 2], 10.0).link_bytes.sum())   # 2 hops + 1 hop
    30.0
    """
    req = _request(G, src, dst, split, tiers, links)
    F = len(req.src_rank)
    w = np.broadcast_to(np.asarray(bytes_per_flow, dtype=np.float64), (F,))
    loads = POLICIES[req.policy].loads
    if loads is not None:
        return loads(req, w, split)
    r = route(G, req.src_rank, req.dst_rank, split=split, tiers=tiers, links=req.links)
    ok = np.asarray(r.reachable)
    lb = r.piece_link.T @ (r.flow_piece.T @ np.where(ok, w, 0.0))
    return Loads(np.asarray(lb), ok, r.hops, r.latency_ns)


def fold(G: nx.Graph, rows, pairs=None, *, links: LinkTable | None = None, split: str = "equal",
         tiers: str = "rule", guard=None) -> Fold:
    """The routing policy's symmetry fold of a phase: a quotient, or the reason there is none.

    Parameters
    ----------
    G : networkx.Graph
    rows : array_like of int, shape (R, m)
        Chip ranks of the disjoint sets exchanging together (one row per group).
    pairs : array_like of int, shape (2, p), optional
        The ordered pattern within every row (member ``pairs[0, i]`` sends to member
        ``pairs[1, i]``); ``None``: an all-to-all in every row.
    links, split, tiers
        As in :func:`route`.
    guard : callable, optional
        Called with the number of representative flows before they are routed (it
        raises to refuse).

    Returns
    -------
    Fold

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> f = fold(build("torus", dims="4x4"), np.arange(16)[None, :])
    >>> f.method, f.quotient.n_classes
    ('translations', 15)
    >>> fold(build("nvl72"), np.arange(72).reshape(9, 8), [np.arange(8), np.roll(np.arange(8), -1)]).describe()
    'twins refused: an ordered pattern (ring, shift): swapping twins would reorder it'
    """
    from ..graphcache import is_pinned, memo
    if is_pinned(G) and (links is None or links is link_table(G)):
        # cached while G is pinned (topo.graphcache); a hit allocates nothing, so the guard is not asked again
        r_ = np.asarray(rows)
        p_ = None if pairs is None else np.asarray(pairs)
        key = ("fold", policy_of(G).name, r_.dtype.str, r_.shape, r_.tobytes(),
               None if p_ is None else (p_.dtype.str, p_.shape, p_.tobytes()), split, tiers)
        return memo(G, key, lambda: policy_of(G).fold(G, rows, pairs, links=links, split=split, tiers=tiers,
                                                      guard=guard))
    return policy_of(G).fold(G, rows, pairs, links=links, split=split, tiers=tiers, guard=guard)
