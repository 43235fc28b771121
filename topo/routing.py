"""Routing: chip pairs -> factored sparse shares of each flow's rate on directed links.

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
SPLITS, TIER_MODES
    The choices of ``route``'s ``split`` and ``tiers``.

Policies (``G.graph["routing"]``)
---------------------------------
``ecmp``
    Shortest paths in physical hops (a virtual patch edge counts its ``hops``)
    through nodes with ``forwards=True`` (the endpoints need not forward), split at
    every hop over the next hops on shortest paths: equally, or in proportion to
    the next-hop link capacity (``split="capacity"``).
``tiered``
    Jalapeño: a pair in one rack (node attribute ``rack``) uses the ``local`` tier
    only, a pair in two racks the ``global`` tier only, each by ECMP on its tier.
    Where the global tier has no path (rail-only wiring, a failed rail) the flow
    relays: it crosses the local tier to a chip of its own rack that has a global
    path to the destination, then the global tier (NCCL PXN, Wang et al. 2023).
    ``tiers="any"`` drops the tier rule (plain ECMP, relaying only where ECMP has
    no path).
``dor``
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
* anything else (generic ECMP): per destination, a shortest-path DAG built in C
  with :mod:`scipy.sparse.csgraph`; pieces are the first-hop links of the source
  and the DAG from each first-hop node to the destination, shared by every
  source with that first hop.

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

import warnings
from dataclasses import dataclass, field
from typing import Literal

import networkx as nx
import numpy as np
import scipy.sparse as sp

from .builders import AXES as _AXES   # torus coordinate attributes, x slowest
from .contract import CAPACITY_GBPS, CHIP, FORWARDS, KIND, LANE_GBPS, LANES, LATENCY_NS, RANK, SWITCH, TIER, \
    forwarding_graph
from .errors import BadInput

__all__ = ["LinkTable", "link_table", "Routes", "route", "Loads", "link_loads", "SPLITS", "TIER_MODES"]

SPLITS = ("equal", "capacity")
TIER_MODES = ("rule", "any")
# Work arrays per destination chunk of the generic router stay under this many cells.
_CHUNK_CELLS = 4_000_000
# Dense chip x switch tables of the fast paths are used below this many cells.
_DENSE_CELLS = 40_000_000
# Per-flow work of the hot paths runs in chunks of this many flows: the temporaries stay
# small and are reused, where full-length ones would each touch fresh memory.
_CHUNK_FLOWS = 1 << 17


# ---------------------------------------------------------------------------------------
# Link table
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkTable:
    """The directed links of ``forwarding_graph(G)``: bundle ``u -- v`` gives ``u->v`` and ``v->u``.

    Attributes
    ----------
    nodes : tuple
        Node ids by index.
    src, dst : numpy.ndarray of int32, shape (L,)
        Node index at each end of link ``l``.
    capacity_gbps : numpy.ndarray of float64, shape (L,)
        Capacity of the link in its one direction, Gb/s.
    tier : numpy.ndarray of str, shape (L,)
    latency_ns : numpy.ndarray of float64, shape (L,)
        The bundle's ``latency_ns`` plus the ``latency_ns`` of ``dst`` when it is a
        switch (a packet pays the switch it enters).
    hops : numpy.ndarray of int32, shape (L,)
        Physical links the link stands for: 1, or 2 for a patched circuit (``hops``).
    node_index : dict
        Node id -> index.
    """

    nodes: tuple
    src: np.ndarray
    dst: np.ndarray
    capacity_gbps: np.ndarray
    tier: np.ndarray
    latency_ns: np.ndarray
    hops: np.ndarray
    node_index: dict = field(repr=False, compare=False)
    _index: dict = field(default_factory=dict, repr=False, compare=False)   # (u, v) -> link, built on use
    _memo: dict = field(default_factory=dict, repr=False, compare=False)    # per-graph routing arrays

    @property
    def capacity_Bps(self) -> np.ndarray:
        """Capacity per direction in bytes per second."""
        return self.capacity_gbps * (1e9 / 8)

    def __len__(self) -> int:
        return len(self.src)

    def index(self, u, v) -> int:
        """Index of the directed link ``u -> v`` (node ids); ``KeyError`` when there is none."""
        try:
            return self._pairs()[(u, v)]
        except KeyError:
            raise KeyError(f"no link {u!r} -> {v!r} in the forwarding graph") from None

    def __contains__(self, uv) -> bool:
        return tuple(uv) in self._pairs()

    def _pairs(self) -> dict:
        if not self._index and len(self.src):
            n = self.nodes
            ends = zip((n[i] for i in self.src.tolist()), (n[j] for j in self.dst.tolist()))
            self._index.update(zip(ends, range(len(self.src))))
        return self._index


def link_table(G: nx.Graph) -> LinkTable:
    """The directed links of ``forwarding_graph(G)``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> lt = link_table(build("jalapeno-rack"))
    >>> len(lt), float(lt.capacity_gbps[0])
    (1536, 800.0)
    """
    H = forwarding_graph(G)
    nodes = tuple(H.nodes)
    idx = {n: i for i, n in enumerate(nodes)}
    edges = list(H.edges(data=True))
    m = len(edges)
    eu = np.fromiter((idx[u] for u, _, _ in edges), np.int32, m)
    ev = np.fromiter((idx[v] for _, v, _ in edges), np.int32, m)
    ecap = np.fromiter((d[CAPACITY_GBPS] if d.get(CAPACITY_GBPS) is not None else d[LANES] * d[LANE_GBPS]
                        for _, _, d in edges), np.float64, m)
    elat = np.fromiter((d.get(LATENCY_NS, 0.0) for _, _, d in edges), np.float64, m)
    ehops = np.fromiter((d.get("hops", 1) for _, _, d in edges), np.int32, m)
    etier = [d.get(TIER) for _, _, d in edges]
    node_lat = np.fromiter((d.get(LATENCY_NS, 0.0) if d.get(KIND) == SWITCH else 0.0 for _, d in H.nodes(data=True)),
                           np.float64, len(nodes))
    # bundle e gives link 2e (u -> v) and link 2e + 1 (v -> u)
    src = np.empty(2 * m, np.int32)
    dst = np.empty(2 * m, np.int32)
    src[0::2], src[1::2] = eu, ev
    dst[0::2], dst[1::2] = ev, eu
    cap = np.repeat(ecap, 2)
    lat = np.repeat(elat, 2) + node_lat[dst]      # a packet pays the switch it enters
    hops = np.repeat(ehops, 2)
    tier = np.empty(2 * m, object)
    tier[0::2] = etier
    tier[1::2] = etier
    return LinkTable(nodes, src, dst, cap, tier, lat, hops, idx)


# ---------------------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Routes:
    """Routes of F flows as two sparse factors of the flows x links share matrix.

    Attributes
    ----------
    links : LinkTable
    src, dst : numpy.ndarray of int, shape (F,)
        Chip ranks.
    flow_piece : scipy.sparse.csr_matrix, shape (F, K)
    piece_link : scipy.sparse.csr_matrix, shape (K, L)
        ``(flow_piece @ piece_link)[f, l]`` is the share of flow ``f``'s rate on link
        ``l``.  For a reachable flow the shares across any cut between source and
        destination sum to 1; an unreachable flow has an empty row.
    reachable, relayed : numpy.ndarray of bool, shape (F,)
        ``relayed``: the flow relays through another chip (rail-only PXN).
    relay_rank : numpy.ndarray of int32, shape (F,)
        The rank of the first chip the flow relays through (in the source's rack,
        or in the destination's when only that side relays), -1 where it does not.
    hops : numpy.ndarray of int32, shape (F,)
        Physical links on the longest path the flow uses (0 if unreachable).
    latency_ns : numpy.ndarray of float64, shape (F,)
        Latency of the slowest path the flow uses (links plus switches entered).
    relay2_rank : numpy.ndarray of int32, shape (F,), optional
        The second relay chip, in the destination's rack, of a flow that relays on
        both sides (``relay_rank`` then is the one in the source's rack); -1 where
        there is none.  ``None`` when no flow relays.
    """

    links: LinkTable
    src: np.ndarray
    dst: np.ndarray
    flow_piece: sp.csr_matrix
    piece_link: sp.csr_matrix
    reachable: np.ndarray
    relayed: np.ndarray
    relay_rank: np.ndarray
    hops: np.ndarray
    latency_ns: np.ndarray
    relay2_rank: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def shares(self, rows=None) -> sp.csr_matrix:
        """The explicit flows x links share matrix, for ``rows`` (all flows by default: mind the size)."""
        fp = self.flow_piece if rows is None else self.flow_piece[np.asarray(rows)]
        return (fp @ self.piece_link).tocsr()


# ---------------------------------------------------------------------------------------
# Internal: node arrays, parts, helpers
# ---------------------------------------------------------------------------------------
@dataclass
class _Net:
    G: nx.Graph
    lt: LinkTable
    n: int
    is_chip: np.ndarray
    fwd: np.ndarray
    rank: np.ndarray          # node -> rank, -1 for switches
    node_of_rank: np.ndarray  # rank -> node, -1 where no chip has that rank
    attr: dict                # name -> int array per node, -1 where missing


def _net(G: nx.Graph, lt: LinkTable) -> _Net:
    """Node arrays of ``G`` in ``lt``'s node order (kept on ``lt`` for the next call with ``G``)."""
    got = lt._memo.get("net")
    if got is not None and got[0] is G:
        return got[1]
    net = _build_net(G, lt)
    lt._memo["net"] = (G, net)
    return net


def _build_net(G: nx.Graph, lt: LinkTable) -> _Net:
    n = len(lt.nodes)
    H_nodes = lt.nodes
    data = [G.nodes[v] if v in G else {} for v in H_nodes]
    is_chip = np.array([d.get(KIND) == CHIP for d in data], bool)
    fwd = np.array([bool(d.get(FORWARDS, d.get(KIND) == SWITCH)) for d in data], bool)
    rank = np.array([d.get(RANK, -1) if d.get(KIND) == CHIP else -1 for d in data], np.int64)
    node_of_rank = np.full(int(rank.max(initial=-1)) + 1, -1, np.int64)
    node_of_rank[rank[rank >= 0]] = np.flatnonzero(rank >= 0)
    attr = {}
    for name in ("rack", "tray", "column") + _AXES:
        vals = [d.get(name) for d in data]
        if any(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in vals):
            attr[name] = np.array([x if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else -1
                                   for x in vals], np.int64)
    return _Net(G, lt, n, is_chip, fwd, rank, node_of_rank, attr)


@dataclass
class _Part:
    """Routes of P pairs on their own piece set.

    Either ``fp`` (a CSR, P x K) or, for the factored paths, ``cols``: every row has
    ``len(cols)`` entries of 1.0, row ``p`` at pieces ``cols[0][p], cols[1][p], ...``
    (kept as columns so that the final assembly copies them once).
    """

    fp: sp.csr_matrix | None
    pl: sp.csr_matrix   # (K, L)
    reach: np.ndarray   # (P,) bool
    hops: np.ndarray    # (P,) int
    lat: np.ndarray     # (P,) float
    cols: tuple = ()

    @property
    def K(self) -> int:
        return self.pl.shape[0]

    @property
    def P(self) -> int:
        return len(self.reach)

    def csr(self) -> sp.csr_matrix:
        if self.fp is None:
            self.fp = _fixed_rows(self.P, self.K, *self.cols)
        return self.fp


def _empty_part(P: int, L: int) -> _Part:
    return _Part(sp.csr_matrix((P, 0)), sp.csr_matrix((0, L)), np.zeros(P, bool), np.zeros(P, np.int32),
                 np.zeros(P))


def _itype(bound: int):
    """The integer dtype for values in ``[-1, bound]``: int32 when it fits (half the memory traffic), else int64."""
    return np.int32 if bound < 2**31 - 1 else np.int64


def _compact(keys: np.ndarray, size: int | None = None):
    """(inverse, unique) of integer ``keys``; dense counting when ``size`` is small, else a sort."""
    if size is not None and 0 < size <= max(4 * len(keys), 1 << 22):
        used = np.zeros(size, bool)
        used[keys] = True
        uniq = np.flatnonzero(used)
        remap = np.cumsum(used) - 1
        return remap[keys], uniq
    uniq, inv = np.unique(keys, return_inverse=True)
    return inv, uniq


def _chunks(n: int):
    """``(start, stop)`` of consecutive chunks of ``_CHUNK_FLOWS`` covering ``range(n)``."""
    return ((c0, min(c0 + _CHUNK_FLOWS, n)) for c0 in range(0, n, _CHUNK_FLOWS))


def _compact_inplace(keys: np.ndarray, size: int) -> np.ndarray:
    """``_compact(keys, size)`` that overwrites ``keys`` with the inverse; returns the unique keys.

    Dense counting runs by chunks, so no full-length temporary is made.
    """
    if not 0 < size <= max(4 * len(keys), 1 << 22):
        inv, uniq = _compact(keys, size)
        keys[:] = inv
        return uniq
    used = np.zeros(size, bool)
    for c0, c1 in _chunks(len(keys)):
        used[keys[c0:c1]] = True
    remap = np.cumsum(used, dtype=_itype(size))
    remap -= 1
    for c0, c1 in _chunks(len(keys)):
        keys[c0:c1] = remap[keys[c0:c1]]
    return np.flatnonzero(used)


def _row_ids(M: np.ndarray):
    """Ids of the distinct rows of a 2-D array: (ids per row, index of one row per id)."""
    if M.shape[1] == 0:
        return np.zeros(M.shape[0], np.int64), np.zeros(min(1, M.shape[0]), np.int64)
    A = np.ascontiguousarray(M)
    if A.dtype == bool:
        A = np.packbits(A, axis=1)
    v = A.view(np.dtype((np.void, A.dtype.itemsize * A.shape[1]))).ravel()
    _, first, inv = np.unique(v, return_index=True, return_inverse=True)
    return inv.astype(np.int64), first


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(starts[i], starts[i] + counts[i])`` without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(total)


def _assemble(F: int, L: int, parts: list[_Part], contrib: list[tuple], disjoint: bool = False):
    """Stack parts' pieces; flow ``f`` sums rows ``r`` of part ``k`` for each (k, f, r) in ``contrib``.

    ``r`` may be ``None``: rows ``0 .. len(f) - 1`` in order (the part routes exactly the
    flows ``f``), which spares an identity index array.  ``disjoint``: no flow is in two
    contributions, so each one writes at its rows' starts (no running cursor).

    Built as a direct CSR scatter (no COO sort): a flow takes each contribution's row in
    turn.  A flow never takes two rows of one part, so no column repeats within a row.
    """
    offs = np.cumsum([0] + [p.K for p in parts])
    K = int(offs[-1])
    pl = sp.vstack([p.pl for p in parts], format="csr") if parts else sp.csr_matrix((0, L))
    contrib = [(k, np.asarray(f), None if r is None else np.asarray(r)) for k, f, r in contrib if len(f)]
    if len(contrib) == 1:
        k, f, r = contrib[0]
        if (len(f) == F == parts[k].P and (r is None or np.array_equal(r, np.arange(F)))
                and np.array_equal(f, np.arange(F))):
            fp = parts[k].csr()
            if offs[k] or fp.shape[1] != K:
                fp = sp.csr_matrix((fp.data, fp.indices + offs[k], fp.indptr), shape=(F, K))
            return fp, pl
    # entries per contribution: a fixed count for factored parts, else per row
    lens = []
    nnz = 0
    for k, f, r in contrib:
        part = parts[k]
        if part.cols:
            c = len(part.cols)
            nnz += c * len(f)
        else:
            ip = part.fp.indptr.astype(np.int64, copy=False)
            c = ip[1:len(f) + 1] - ip[:len(f)] if r is None else ip[r + 1] - ip[r]
            nnz += int(c.sum())
        lens.append(c)
    idx_t = _itype(max(nnz, K))
    counts = np.zeros(F, idx_t)
    for (k, f, r), c in zip(contrib, lens):
        counts[f] += c                      # f holds each flow at most once
    indptr = np.empty(F + 1, idx_t)
    indptr[0] = 0
    np.cumsum(counts, dtype=idx_t, out=indptr[1:])
    del counts
    indices = np.empty(nnz, idx_t)
    all_unit = all(parts[k].cols or np.all(parts[k].fp.data == 1.0) for k, _, _ in contrib)
    data = np.ones(nnz) if all_unit else np.empty(nnz)
    # where each flow's next entry goes; read-only when every flow has one contribution
    cursor = indptr[:-1] if disjoint or len(contrib) == 1 else indptr[:-1].copy()
    for i, ((k, f, r), c) in enumerate(zip(contrib, lens)):
        part = parts[k]
        last = disjoint or i == len(contrib) - 1
        if part.cols:
            # factored rows: one scatter per column, by chunks of flows (no full-length
            # temporaries); positions are intp (numpy converts narrower ones per scatter)
            for c0, c1 in _chunks(len(f)):
                fc = f[c0:c1]
                rc = slice(c0, c1) if r is None else r[c0:c1]
                pos = cursor[fc].astype(np.intp, copy=False)
                for j, col in enumerate(part.cols):
                    if j:
                        pos += 1
                    indices[pos] = col[rc] + offs[k] if offs[k] else col[rc]
                    if not all_unit:
                        data[pos] = 1.0
                if not last:
                    pos += 1
                    cursor[fc] = pos
        else:
            fp = part.fp
            starts = fp.indptr[:len(f)] if r is None else fp.indptr[r]
            dest = _ranges(cursor[f].astype(np.int64), c)
            srcp = _ranges(starts.astype(np.int64), c)
            indices[dest] = fp.indices[srcp] + offs[k]
            if not all_unit:
                data[dest] = fp.data[srcp]
            if not last:
                cursor[f] += c
    out = sp.csr_matrix((F, K), dtype=float)
    out.data, out.indices, out.indptr = data, indices, indptr
    out.has_sorted_indices = False
    return out, pl


def _merge(P: int, L: int, pieces: list[tuple[np.ndarray, _Part]]) -> _Part:
    """One part for P pairs from parts that each cover the pairs ``idx`` (disjoint)."""
    pieces = [(i, p) for i, p in pieces if len(i)]
    if not pieces:
        return _empty_part(P, L)
    parts = [p for _, p in pieces]
    fp, pl = _assemble(P, L, parts, [(k, i, None) for k, (i, _) in enumerate(pieces)], disjoint=True)
    reach = np.zeros(P, bool)
    hops = np.zeros(P, np.int32)
    lat = np.zeros(P)
    for i, p in pieces:
        reach[i], hops[i], lat[i] = p.reach, p.hops, p.lat
    return _Part(fp, pl, reach, hops, lat)


def _fixed_rows(F: int, K: int, *cols) -> sp.csr_matrix:
    """CSR with one entry of 1.0 in each of ``cols`` per row (columns increasing)."""
    w = len(cols)
    idt = np.int32 if max(K, w * F) < 2**31 - 1 else np.int64
    ind = np.empty((F, w), idt)
    for j, c in enumerate(cols):
        ind[:, j] = c
    indptr = np.arange(0, w * F + 1, w, dtype=idt)
    m = sp.csr_matrix((F, K), dtype=float)
    m.data, m.indices, m.indptr = np.ones(w * F), ind.ravel(), indptr
    return m


def _coo_part(P, K, L, f_rows, f_cols, f_vals, p_rows, p_cols, p_vals, reach, hops, lat) -> _Part:
    fp = sp.csr_matrix((f_vals, (f_rows, f_cols)), shape=(P, K))
    pl = sp.csr_matrix((p_vals, (p_rows, p_cols)), shape=(K, L))
    fp.sum_duplicates()
    pl.sum_duplicates()
    return _Part(fp, pl, reach, np.asarray(hops, np.int32), np.asarray(lat, float))


# ---------------------------------------------------------------------------------------
# Reachability through forwarding nodes (component test, exact)
# ---------------------------------------------------------------------------------------
class _Reach:
    """Whether a path with forwarding intermediates joins two nodes, on the links in ``mask``."""

    def __init__(self, net: _Net, mask: np.ndarray):
        n = net.n
        la = np.flatnonzero(mask)
        u, v = net.lt.src[la].astype(np.int64), net.lt.dst[la].astype(np.int64)
        fwd = net.fwd
        both = fwd[u] & fwd[v]
        A = sp.csr_matrix((np.ones(both.sum()), (u[both], v[both])), shape=(n, n))
        from scipy.sparse import csgraph   # imported on use: it costs ~50 ms at start-up
        _, lab = csgraph.connected_components(A, directed=False)
        # a forwarding node is in its component; a non-forwarding one touches its neighbours'
        fn = np.flatnonzero(fwd)
        edge = ~fwd[u] & fwd[v]
        rows = np.concatenate([fn, u[edge]])
        cols = np.concatenate([lab[fn], lab[v[edge]]])
        mem = sp.csr_matrix((np.ones(len(rows), bool), (rows, cols)), shape=(n, n))
        mem.sum_duplicates()
        mem.sort_indices()
        # group nodes by their set of components (few distinct sets on real fabrics)
        sig = {}
        self.sid = np.empty(n, np.int64)
        for x in range(n):
            key = mem.indices[mem.indptr[x]:mem.indptr[x + 1]].tobytes()
            self.sid[x] = sig.setdefault(key, len(sig))
        first = np.unique(self.sid, return_index=True)[1]
        U = mem[first].astype(np.float64)
        self.table = (U @ U.T).toarray() > 0
        # direct links between two non-forwarding nodes
        nf = ~fwd[u] & ~fwd[v]
        self.adj = np.unique(u[nf] * n + v[nf])
        self.n = n

    def joins(self, nodes: np.ndarray) -> bool:
        """Whether every two of ``nodes`` are joined (then no pair of them needs a test)."""
        u = np.unique(self.sid[nodes])
        return bool(self.table[np.ix_(u, u)].all())

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.asarray(a, np.int64)
        b = np.asarray(b, np.int64)
        ok = self.table[self.sid[a], self.sid[b]]
        if len(self.adj):
            k = a * self.n + b
            pos = np.minimum(np.searchsorted(self.adj, k), len(self.adj) - 1)
            ok = ok | (self.adj[pos] == k)
        return ok


# ---------------------------------------------------------------------------------------
# Generic ECMP (any graph): per-destination shortest-path DAGs
# ---------------------------------------------------------------------------------------
class _Dags:
    """Per-destination shortest-path DAGs on the links in ``mask``, by chunks of destinations.

    Iterating yields, per chunk of destinations ``dc``: their distance rows ``dist``
    (c x n), the DAG edges as (destination row ``jj``, link position ``kk`` into
    ``la``), the keys ``key_u``/``key_v`` = row * n + tail/head node, each edge's split
    ``frac`` of its tail's traffic, and the indices ``pidx`` of the pairs of the chunk.
    """

    def __init__(self, net: _Net, mask: np.ndarray, d: np.ndarray, split: str):
        lt, n = net.lt, net.n
        la = np.flatnonzero(mask)
        # links in source-node order: the DAG entries of a chunk then come out sorted by
        # (destination, node) from np.nonzero, with no argsort
        la = la[np.argsort(lt.src[la], kind="stable")]
        self.la, self.n, self.fwd = la, n, net.fwd
        self.lsrc, self.ldst = lt.src[la].astype(np.int64), lt.dst[la].astype(np.int64)
        self.lw = lt.hops[la].astype(np.float64)
        fwd = net.fwd
        # Search graph, walked from the destination against the flow: flow link b->a is the
        # search edge a->b, allowed when a forwards; a non-forwarding destination expands
        # through its own copy ("out" node), which nothing enters.
        nonf = np.flatnonzero(~fwd)
        self.outid = np.full(n, -1, np.int64)
        self.outid[nonf] = n + np.arange(len(nonf))
        a_search = np.where(fwd[self.ldst], self.ldst, self.outid[self.ldst])
        ns = n + len(nonf)
        self.S = sp.csr_matrix((self.lw, (a_search, self.lsrc)), shape=(ns, ns))
        self.unweighted = bool(np.all(self.lw == 1))
        self.cap = lt.capacity_gbps[la] if split == "capacity" else np.ones(len(la))
        self.llat = lt.latency_ns[la]
        self.order = np.argsort(d, kind="stable")
        self.dests, self.dstart = np.unique(d[self.order], return_index=True)
        self.dend = np.append(self.dstart[1:], len(d))
        self.chunk = max(1, _CHUNK_CELLS // max(len(la), ns, 1))
        self.d = d

    def __iter__(self):
        n, fwd, lsrc, ldst, lw = self.n, self.fwd, self.lsrc, self.ldst, self.lw
        for c0 in range(0, len(self.dests), self.chunk):
            dc = self.dests[c0:c0 + self.chunk]
            c = len(dc)
            starts = np.where(fwd[dc], dc, self.outid[dc])
            from scipy.sparse import csgraph
            dist = csgraph.shortest_path(self.S, method="D", directed=True, unweighted=self.unweighted,
                                         indices=starts)[:, :n]
            dist[np.arange(c), dc] = 0.0
            du = dist[:, lsrc]
            dv = dist[:, ldst]
            on = (du == dv + lw) & np.isfinite(dv) & (fwd[ldst][None, :] | (ldst[None, :] == dc[:, None]))
            del du
            jj, kk = np.nonzero(on)
            del on
            key_u = jj * n + lsrc[kk]
            key_v = jj * n + ldst[kk]
            w = self.cap[kk]
            denom = np.bincount(key_u, weights=w, minlength=c * n)
            frac = w / denom[key_u]
            pidx = self.order[self.dstart[c0]:self.dend[min(c0 + self.chunk, len(self.dests)) - 1]]
            yield dc, dist, jj, kk, key_u, key_v, frac, pidx

    def reached(self, s: np.ndarray, dc, dist, pidx):
        """The chunk's pairs whose source reaches the destination.

        Returns (pair indices, destination row of each, hop count, key = row * n + source).
        """
        pj = np.searchsorted(dc, self.d[pidx])
        ps = s[pidx]
        dsrc = dist[pj, ps]
        ok = np.isfinite(dsrc)
        pidx, pj, ps, dsrc = pidx[ok], pj[ok], ps[ok], dsrc[ok]
        return pidx, pj, dsrc.astype(np.int32), pj * self.n + ps

    def latency(self, dc, kk, key_u, key_v, levels) -> np.ndarray:
        """Latency of the slowest path from each (row, node) to the row's destination, shape (c * n,)."""
        order, bounds = levels
        ku, kv, ll = key_u[order], key_v[order], self.llat[kk[order]]
        latnode = np.full(len(dc) * self.n, -np.inf)
        latnode[np.arange(len(dc)) * self.n + dc] = 0.0
        for a0, a1 in zip(bounds[:-1], bounds[1:]):       # nearest levels first: a longest-path DP
            np.maximum.at(latnode, ku[a0:a1], ll[a0:a1] + latnode[kv[a0:a1]])
        return latnode

    def levels(self, dist, jj, kk):
        """DAG edges ordered by their tail's distance, nearest first: (order, level bounds in it)."""
        lev = dist[jj, self.lsrc[kk]]
        small = lev.astype(np.int16 if lev.max(initial=0) < 2**15 else np.int64)
        # levels are small integers: a stable sort of int16 is a radix sort
        order = np.argsort(small, kind="stable")
        counts = np.bincount(small)
        bounds = np.concatenate([[0], np.cumsum(counts[counts > 0])])
        return order, bounds

def _generic(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str) -> _Part:
    """Exact per-hop ECMP for pairs (s, d) of node indices on the links in ``mask``.

    Pieces: single links (the source's first hops) and, per destination, the DAG
    from each first-hop node to it (shared by every source with that first hop).
    """
    lt, n = net.lt, net.n
    L, P = len(lt), len(s)
    if P == 0:
        return _empty_part(0, L)
    dags = _Dags(net, mask, d, split)
    la, ldst = dags.la, dags.ldst
    reach = np.zeros(P, bool)
    hops = np.zeros(P, np.int32)
    lat = np.zeros(P)
    f_rows, f_cols, f_vals = [], [], []      # flow -> piece (link pieces: -1 - link id, for now)
    p_rows, p_cols, p_vals = [], [], []
    n_node_pieces = 0
    for dc, dist, jj, kk, key_u, key_v, frac, pidx in dags:
        c = len(dc)
        sk = key_u                           # sorted: row-major nonzero over source-ordered links
        pidx, pj, h, key_s = dags.reached(s, dc, dist, pidx)
        reach[pidx] = True
        hops[pidx] = h
        lo = np.searchsorted(sk, key_s, "left")
        hi = np.searchsorted(sk, key_s, "right")
        cnt = hi - lo
        rep = np.repeat(np.arange(len(pidx)), cnt)
        pos = lo[rep] + np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        e = pos
        first_link = la[kk[e]]
        first_frac = frac[e]
        f_rows.append(pidx[rep])
        f_cols.append(-1 - first_link.astype(np.int64))
        f_vals.append(first_frac)
        # node pieces: the DAG from each first-hop node that is not the destination
        nxt = key_v[e]
        inner = ldst[kk[e]] != dc[pj[rep]]
        pinv, pkeys = _compact(nxt[inner], c * n)
        f_rows.append(pidx[rep][inner])
        f_cols.append(n_node_pieces + pinv)
        f_vals.append(first_frac[inner])
        if len(pkeys):
            T = sp.csr_matrix((frac, (key_u, key_v)), shape=(c * n, c * n))
            Fm = sp.csr_matrix((frac, (key_u, la[kk])), shape=(c * n, L))
            X = sp.csr_matrix((np.ones(len(pkeys)), (np.arange(len(pkeys)), pkeys)), shape=(len(pkeys), c * n))
            acc = [X]
            for _ in range(int(dist[np.isfinite(dist)].max()) + 1):
                X = X @ T
                if X.nnz == 0:
                    break
                acc.append(X)
            Nm = acc[0] if len(acc) == 1 else sp.vstack(acc).tocsr()
            if len(acc) > 1:
                # rows of every step belong to the same pieces: fold them back
                fold = sp.csr_matrix((np.ones(Nm.shape[0]), (np.arange(Nm.shape[0]),
                                                             np.tile(np.arange(len(pkeys)), len(acc)))),
                                     shape=(Nm.shape[0], len(pkeys)))
                Nm = (fold.T @ Nm).tocsr()
            PL = (Nm @ Fm).tocoo()
            p_rows.append(PL.row.astype(np.int64) + n_node_pieces)
            p_cols.append(PL.col.astype(np.int64))
            p_vals.append(PL.data)
        n_node_pieces += len(pkeys)
        lat[pidx] = dags.latency(dc, kk, key_u, key_v, dags.levels(dist, jj, kk))[key_s]
    # link pieces get ids after the node pieces
    rows = np.concatenate(f_rows) if f_rows else np.zeros(0, np.int64)
    cols = np.concatenate(f_cols) if f_cols else np.zeros(0, np.int64)
    vals = np.concatenate(f_vals) if f_vals else np.zeros(0)
    is_link = cols < 0
    linv, links = _compact(-1 - cols[is_link], L)
    cols = cols.copy()
    cols[is_link] = n_node_pieces + linv
    K = n_node_pieces + len(links)
    p_rows.append(n_node_pieces + np.arange(len(links)))
    p_cols.append(links)
    p_vals.append(np.ones(len(links)))
    return _coo_part(P, K, L, rows, cols, vals, np.concatenate(p_rows), np.concatenate(p_cols),
                     np.concatenate(p_vals), reach, hops, lat)


def _ecmp_loads(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, w: np.ndarray, split: str):
    """Link bytes of per-hop ECMP flows (s, d) moving ``w`` bytes each, without per-flow pieces.

    Each destination's demand is pushed down its shortest-path DAG, farthest nodes
    first, splitting at every node as :func:`_generic` does: O(DAG edges) per
    destination instead of a piece per (first hop, destination).  Returns
    ``(link_bytes (L,), reach, hops, lat)`` with ``reach``/``hops``/``lat`` per pair.
    """
    lt, n = net.lt, net.n
    L, P = len(lt), len(s)
    link_bytes = np.zeros(L)
    reach = np.zeros(P, bool)
    hops = np.zeros(P, np.int32)
    lat = np.zeros(P)
    if P == 0:
        return link_bytes, reach, hops, lat
    dags = _Dags(net, mask, d, split)
    la = dags.la
    for dc, dist, jj, kk, key_u, key_v, frac, pidx in dags:
        c = len(dc)
        pidx, _, h, key_s = dags.reached(s, dc, dist, pidx)
        reach[pidx] = True
        hops[pidx] = h
        node_bytes = np.bincount(key_s, weights=w[pidx], minlength=c * n)   # demand entering at each node
        levels = order, bounds = dags.levels(dist, jj, kk)
        ku, kv, fr = key_u[order], key_v[order], frac[order]
        edge_bytes = np.zeros(len(order))
        for a0, a1 in zip(bounds[-2::-1], bounds[:0:-1]):   # farthest first: a node's inflow is complete
            f = node_bytes[ku[a0:a1]] * fr[a0:a1]
            edge_bytes[a0:a1] = f
            np.add.at(node_bytes, kv[a0:a1], f)
        link_bytes += np.bincount(la[kk[order]], weights=edge_bytes, minlength=L)
        lat[pidx] = dags.latency(dc, kk, key_u, key_v, levels)[key_s]
    return link_bytes, reach, hops, lat


# ---------------------------------------------------------------------------------------
# Fast path 1: a single switched tier (chips -- switches -- chips)
# ---------------------------------------------------------------------------------------
def _switched(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str):
    """Factored routes where every chip's neighbours are switches that connect only to chips.

    Then every path is chip -> switch -> chip, and ECMP takes the common switches of
    least hop cost (a patched rail circuit counts 2 per side, a local switch 1).
    Returns a list of ``(pair indices, part)``, or ``None`` when the links in ``mask``
    are not a single switched tier; pairs left out have no common switch.
    """
    lt = net.lt
    la = np.flatnonzero(mask)
    u, v = lt.src[la].astype(np.int64), lt.dst[la].astype(np.int64)
    chip = net.is_chip
    from_chip = chip[u]
    if not from_chip.any() or chip[v[from_chip]].any() or not net.fwd[v[from_chip]].all():
        return None
    sw = np.zeros(net.n, bool)
    sw[v[from_chip]] = True
    if not chip[v[sw[u]]].all():            # a chip-facing switch with a switch neighbour: not one tier
        return None
    # hop cost per switch: the same on all its links; with forwarding chips, one cost only
    # (else a path through a chip could undercut a costly common switch)
    lh = lt.hops[la].astype(np.int64)
    hmax = np.zeros(net.n, np.int64)
    hmin = np.full(net.n, np.iinfo(np.int64).max)
    at_sw = sw[u]
    np.maximum.at(hmax, u[at_sw], lh[at_sw])
    np.minimum.at(hmin, u[at_sw], lh[at_sw])
    if (hmax[sw] != hmin[sw]).any() or (len(np.unique(hmax[sw])) > 1 and net.fwd[chip].any()):
        return None
    chips_n = np.flatnonzero(chip)
    sws = np.flatnonzero(sw)
    Nc, S = len(chips_n), len(sws)
    if Nc * S > _DENSE_CELLS:
        return None
    cidx = np.full(net.n, -1, np.int64)
    cidx[chips_n] = np.arange(Nc)
    sidx = np.full(net.n, -1, np.int64)
    sidx[sws] = np.arange(S)
    up = np.full((Nc, S), -1, np.int64)
    down = np.full((S, Nc), -1, np.int64)
    fu = from_chip
    up[cidx[u[fu]], sidx[v[fu]]] = la[fu]
    fs = sw[u] & chip[v]
    down[sidx[u[fs]], cidx[v[fs]]] = la[fs]
    handled, part = _common(lt, up, down, cidx[s], cidx[d], split, hmax[sws])
    return [(None if handled.all() else np.flatnonzero(handled), part)]


def _common(lt: LinkTable, up: np.ndarray, down: np.ndarray, sc: np.ndarray, dc: np.ndarray, split: str,
            sw_hops: np.ndarray):
    """Routes chip -> C -> chip through the switches C adjacent to both ends of least hop cost.

    ``up`` (chips x switches) and ``down`` (switches x chips) hold link ids (-1: none),
    ``sc``, ``dc`` are chip indices into them, ``sw_hops`` the hop cost of each side of a
    switch.  Pieces: up(s, C) and down(d, C, s's capacity profile), keyed with
    ``np.unique``-free dense compaction.  Returns ``(handled, part)``.
    """
    Nc = up.shape[0]
    M = up >= 0
    mid, mfirst = _row_ids(M)
    Um = M[mfirst]
    nm = len(mfirst)
    pm_inv, pm = _compact(mid[sc] * nm + mid[dc], nm * nm)
    C = Um[pm // nm] & Um[pm % nm]
    # keep the common switches of least cost
    cost = np.where(C, sw_hops[None, :], np.iinfo(np.int64).max)
    best = cost.min(axis=1, initial=np.iinfo(np.int64).max)
    C &= cost == best[:, None]
    cid, cfirst = _row_ids(C)
    Cset = C[cfirst]
    nonempty = Cset.any(axis=1)
    c_hops = 2 * np.where(nonempty, best[cfirst], 0)
    ckey = cid[pm_inv]
    handled = nonempty[ckey]
    if not handled.any():
        return handled, _empty_part(0, len(lt))
    if not nonempty.all():
        sc, dc, ckey = sc[handled], dc[handled], ckey[handled]
    F = len(sc)
    nC = len(cfirst)
    capup = np.where(M, lt.capacity_gbps[np.maximum(up, 0)], 0.0)
    if split == "capacity":
        prof, pfirst = _row_ids(capup)
        profrow = capup[pfirst]
    else:
        prof, pfirst = np.zeros(Nc, np.int64), np.zeros(1, np.int64)
        profrow = M[:1].astype(float)
    nP = len(pfirst)
    up_inv, up_keys = _compact(sc * nC + ckey, Nc * nC)
    dn_inv, dn_keys = _compact((dc * nC + ckey) * nP + prof[sc], Nc * nC * nP)
    Ku = len(up_keys)
    K = Ku + len(dn_keys)
    # piece rows, one group per distinct switch set C (a handful on real fabrics)
    p_rows, p_cols, p_vals = [], [], []
    uc, uk = up_keys // nC, up_keys % nC
    dkey, dprof = dn_keys // nP, dn_keys % nP
    dchip, dk = dkey // nC, dkey % nC
    for k in np.flatnonzero(nonempty):
        members = np.flatnonzero(Cset[k])
        sel = np.flatnonzero(uk == k)
        if len(sel):
            w = capup[uc[sel]][:, members] if split == "capacity" else np.ones((len(sel), len(members)))
            p_rows.append(np.repeat(sel, len(members)))
            p_cols.append(up[uc[sel]][:, members].ravel())
            p_vals.append((w / w.sum(axis=1, keepdims=True)).ravel())
        sel = np.flatnonzero(dk == k)
        if len(sel):
            w = profrow[dprof[sel]][:, members] if split == "capacity" else np.ones((len(sel), len(members)))
            p_rows.append(Ku + np.repeat(sel, len(members)))
            p_cols.append(down[members][:, dchip[sel]].T.ravel())
            p_vals.append((w / w.sum(axis=1, keepdims=True)).ravel())
    pl = sp.csr_matrix((np.concatenate(p_vals), (np.concatenate(p_rows), np.concatenate(p_cols))),
                       shape=(K, len(lt)))
    # latency: the slowest switch of C
    latup = np.where(M, lt.latency_ns[np.maximum(up, 0)], -np.inf)
    latdn = np.where(down >= 0, lt.latency_ns[np.maximum(down, 0)], -np.inf)
    a_max, a_min = np.max(latup, axis=1), np.min(np.where(M, latup, np.inf), axis=1)
    b_max, b_min = np.max(latdn, axis=0), np.min(np.where(down >= 0, latdn, np.inf), axis=0)
    if np.all((a_max == a_min) | ~M.any(1)) and np.all((b_max == b_min) | ~(down >= 0).any(0)):
        lat = a_max[sc] + b_max[dc]
    else:
        lat = np.empty(F)
        order = np.argsort(ckey, kind="stable")
        ks, kstart = np.unique(ckey[order], return_index=True)
        kend = np.append(kstart[1:], F)
        for k, a0, a1 in zip(ks, kstart, kend):
            sel = order[a0:a1]
            members = np.flatnonzero(Cset[k])
            lat[sel] = np.max(latup[sc[sel]][:, members] + latdn[members][:, dc[sel]].T, axis=1)
    part = _Part(None, pl, np.ones(F, bool), c_hops[ckey].astype(np.int32), lat, (up_inv, Ku + dn_inv))
    return handled, part


# ---------------------------------------------------------------------------------------
# Fast path 2: a leaf-spine tier (chips -- leaves -- spines -- leaves -- chips)
# ---------------------------------------------------------------------------------------
def _leafspine(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str):
    """Factored 4-hop routes on a two-level Clos (the Jalapeño global tier with switching leaves).

    Pairs that share a leaf go through their common leaves (2 hops); pairs with a
    leaf -> spine -> leaf path take every such shortest path (4 hops).  Returns a list
    of ``(pair indices, part)``, or ``None`` when the tier is not leaf-spine shaped.
    """
    lt = net.lt
    la = np.flatnonzero(mask)
    u, v = lt.src[la].astype(np.int64), lt.dst[la].astype(np.int64)
    chip, fwd = net.is_chip, net.fwd
    fc = chip[u]
    if not fc.any() or chip[v[fc]].any():
        return None
    leaf = np.zeros(net.n, bool)
    leaf[v[fc]] = True
    fl = leaf[u] & ~chip[v]
    spine = np.zeros(net.n, bool)
    spine[v[fl]] = True
    if (leaf & spine).any() or not leaf[v[spine[u]]].all() or not fwd[leaf | spine].all() or not spine.any():
        return None
    if fwd[u[fc]].any():
        return None                                      # forwarding chips: paths through chips too
    if not (chip | leaf | spine)[u].all():
        return None
    h = np.unique(lt.hops[la])
    if len(h) != 1:
        return None
    h = int(h[0])
    chips_n, leaves, spines = np.flatnonzero(chip), np.flatnonzero(leaf), np.flatnonzero(spine)
    Nc, NL, NS = len(chips_n), len(leaves), len(spines)
    if Nc * NL > _DENSE_CELLS or NL * NS > _DENSE_CELLS // 8:
        return None
    ix = np.full(net.n, -1, np.int64)
    ix[chips_n] = np.arange(Nc)
    ix[leaves] = np.arange(NL)
    ix[spines] = np.arange(NS)
    CL = np.full((Nc, NL), -1, np.int64)
    LC = np.full((NL, Nc), -1, np.int64)
    LS = np.full((NL, NS), -1, np.int64)
    SL = np.full((NS, NL), -1, np.int64)
    for A, a_ok, b_ok in ((CL, chip, leaf), (LC, leaf, chip), (LS, leaf, spine), (SL, spine, leaf)):
        sel = a_ok[u] & b_ok[v]
        A[ix[u[sel]], ix[v[sel]]] = la[sel]
    cap = lt.capacity_gbps
    llat = lt.latency_ns

    def weights(A):
        return np.where(A >= 0, cap[np.maximum(A, 0)] if split == "capacity" else 1.0, 0.0)

    wCL, wLS, wSL = weights(CL), weights(LS), weights(SL)
    mLS, mSL = LS >= 0, SL >= 0
    cp, cpfirst = _row_ids(wCL if split == "capacity" else CL >= 0)
    ls, lsfirst = _row_ids((LC >= 0).T)
    ncp, nls = len(cpfirst), len(lsfirst)
    # combo per flow: key cp[ix[s]] * nls + ls[ix[d]], compacted; per-flow arrays used as
    # indices stay int64 (numpy converts narrower index arrays on every use)
    cp_n = np.full(net.n, -1, np.int64)
    ls_n = np.full(net.n, -1, np.int64)
    cp_n[chips_n], ls_n[chips_n] = cp, ls
    comb_inv = np.empty(len(s), np.int64)
    for c0, c1 in _chunks(len(s)):
        key = cp_n[s[c0:c1]]
        key *= nls
        key += ls_n[d[c0:c1]]
        comb_inv[c0:c1] = key
    combs = _compact_inplace(comb_inv, ncp * nls)
    nK = len(combs)
    ok = np.zeros(nK, bool)
    shared = np.zeros(nK, bool)
    wvec = np.zeros((nK, NL))
    arrive = np.zeros((nK, NL))
    mid_rows, mid_cols, mid_vals = [], [], []
    mlat = np.full(nK, -np.inf)
    mlat_pairs = []
    for k, key in enumerate(combs):
        a, b = cpfirst[key // nls], lsfirst[key % nls]
        Ls, Ld = wCL[a] > 0, LC[:, b] >= 0
        if (Ls & Ld).any():
            shared[k] = True                             # a shared leaf: 2 hops through the common leaves
            continue
        if not Ld.any():
            continue
        Sd = mSL[:, Ld].any(axis=1)
        useL = Ls & (mLS & Sd[None, :]).any(axis=1)
        if not useL.any():
            continue
        ok[k] = True
        w = np.where(useL, wCL[a], 0.0)
        w /= w.sum()
        q = np.where(Sd[None, :] & useL[:, None], wLS, 0.0)
        qs = q.sum(axis=1, keepdims=True)
        q = np.divide(q, qs, out=np.zeros_like(q), where=qs > 0)
        upm = w[:, None] * q                             # (NL, NS) mass on leaf -> spine
        m_sp = upm.sum(axis=0)
        r = np.where(Ld[None, :], wSL, 0.0)
        rs = r.sum(axis=1, keepdims=True)
        r = np.divide(r, rs, out=np.zeros_like(r), where=rs > 0)
        dnm = m_sp[:, None] * r                          # (NS, NL) mass on spine -> leaf
        wvec[k] = w
        arrive[k] = dnm.sum(axis=0)
        i1, j1 = np.nonzero(upm)
        i2, j2 = np.nonzero(dnm)
        mid_rows.append(np.full(len(i1) + len(i2), k))
        mid_cols.append(np.concatenate([LS[i1, j1], SL[i2, j2]]))
        mid_vals.append(np.concatenate([upm[i1, j1], dnm[i2, j2]]))
        # slowest leaf -> spine -> leaf per (first leaf, last leaf)
        l1, l2 = np.flatnonzero(useL), np.flatnonzero(arrive[k] > 0)
        tot = (np.where(upm[l1] > 0, llat[np.maximum(LS[l1], 0)], -np.inf)[:, :, None]
               + np.where(dnm[:, l2] > 0, llat[np.maximum(SL[:, l2], 0)], -np.inf)[None, :, :])
        pair_lat = tot.max(axis=1)                       # (len l1, len l2)
        mlat[k] = pair_lat.max()
        mlat_pairs.append((l1, l2, pair_lat))
    out = []
    if shared.any():
        two = np.flatnonzero(shared[comb_inv])
        handled2, part2 = _common(lt, CL, LC, ix[s[two]], ix[d[two]], split, np.full(NL, h))
        out.append((two[handled2], part2))
    if not ok.any():
        return out
    handled = None if ok.all() else ok[comb_inv]          # None: every flow
    comb = comb_inv
    if handled is not None:
        s, d, comb = s[handled], d[handled], comb_inv[handled]
    del comb_inv
    F = len(s)
    # compact the combos actually used, then the up/down pieces keyed by their share vectors
    kept = np.flatnonzero(ok)
    kmap = np.full(nK, -1, np.int64)
    kmap[kept] = np.arange(len(kept))
    wid, wfirst = _row_ids(np.round(wvec[kept], 12))
    aid, afirst = _row_ids(np.round(arrive[kept], 12))
    kc = comb if len(kept) == nK else kmap[comb]           # kmap is the identity when every combo is kept
    del comb
    latCL = np.where(CL >= 0, llat[np.maximum(CL, 0)], np.nan)
    latLC = np.where(LC >= 0, llat[np.maximum(LC, 0)], np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a chip with no leaf left: an all-NaN row
        a_c = np.nanmax(latCL, axis=1)
        b_c = np.nanmax(latLC, axis=0)
        const = (np.all((np.nanmin(latCL, axis=1) == a_c) | np.isnan(a_c))
                 and np.all((np.nanmin(latLC, axis=0) == b_c) | np.isnan(b_c)))
    # per flow, by chunks: up piece key ix[s] * nw + wid[kc], down piece key ix[d] * na + aid[kc]
    # (compacted below) and, when chip <-> leaf latencies are constant per chip, the latency
    # a_c[ix[s]] + mlat[kc] + b_c[ix[d]] (summed in that order)
    nw, na = len(wfirst), len(afirst)
    up_inv = np.empty(F, _itype(Nc * nw))
    dn_inv = np.empty(F, _itype(Nc * na))
    lat = np.empty(F)
    mlat_k = mlat[kept]
    for c0, c1 in _chunks(F):
        sc, dc, kcc = ix[s[c0:c1]], ix[d[c0:c1]], kc[c0:c1]
        key = sc * nw
        key += wid[kcc]
        up_inv[c0:c1] = key
        key = dc * na
        key += aid[kcc]
        dn_inv[c0:c1] = key
        if const:
            lat_c = a_c[sc]
            lat_c += mlat_k[kcc]
            lat_c += b_c[dc]
            lat[c0:c1] = lat_c
    up_keys = _compact_inplace(up_inv, Nc * nw)
    dn_keys = _compact_inplace(dn_inv, Nc * na)
    Ku, Km = len(up_keys), len(kept)
    K = Ku + Km + len(dn_keys)
    # up pieces: chip -> its usable leaves
    uchip, uw = up_keys // len(wfirst), wvec[kept][wfirst][up_keys % len(wfirst)]
    ui, uj = np.nonzero(uw)
    # down pieces: the leaves of d -> d
    dchip, dw = dn_keys // len(afirst), arrive[kept][afirst][dn_keys % len(afirst)]
    di, dj = np.nonzero(dw)
    mr = np.concatenate([mid_rows[i] for i in range(len(mid_rows))])
    mid_rows_k = kmap[mr]
    rows = np.concatenate([ui, Ku + mid_rows_k, Ku + Km + di])
    cols = np.concatenate([CL[uchip[ui], uj], np.concatenate(mid_cols), LC[dj, dchip[di]]])
    vals = np.concatenate([uw[ui, uj], np.concatenate(mid_vals), dw[di, dj]])
    pl = sp.csr_matrix((vals, (rows, cols)), shape=(K, len(lt)))
    if not const:
        # latency: the slowest chip -> leaf -> spine -> leaf -> chip per flow, by combo
        order = np.argsort(kc, kind="stable")
        ks, kstart = np.unique(kc[order], return_index=True)
        kend = np.append(kstart[1:], F)
        ok_idx = np.flatnonzero(ok)
        for k, a0, a1 in zip(ks, kstart, kend):
            sel = order[a0:a1]
            l1, l2, pair_lat = mlat_pairs[int(np.searchsorted(ok_idx, kept[k]))]
            tot = latCL[ix[s[sel]]][:, l1][:, :, None] + pair_lat[None] + latLC[l2][:, ix[d[sel]]].T[:, None, :]
            lat[sel] = np.nanmax(tot.reshape(len(sel), -1), axis=1)
    mid_col = kc                                           # kc is ours: shifted in place
    mid_col += Ku
    dn_col = dn_inv.astype(_itype(K), copy=False)
    dn_col += Ku + Km
    out.append((None if handled is None else np.flatnonzero(handled),
                _Part(None, pl, np.ones(F, bool), np.full(F, 4 * h, np.int32), lat, (up_inv, mid_col, dn_col))))
    return out


# ---------------------------------------------------------------------------------------
# ECMP on a link subset: fast paths first, generic for what they leave
# ---------------------------------------------------------------------------------------
def _route_on(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str,
              reach: _Reach | None = None, fast: bool = True) -> _Part:
    L, P = len(net.lt), len(s)
    if P == 0:
        return _empty_part(0, L)
    rest = None                              # pairs not yet routed; None: all P, in order
    done: list[tuple[np.ndarray | None, _Part]] = []
    if fast:
        for path in (_switched, _leafspine):
            if rest is not None and not len(rest):
                break
            got = path(net, mask, s if rest is None else s[rest], d if rest is None else d[rest], split)
            if got is None:
                continue
            left = np.ones(P if rest is None else len(rest), bool)
            for idx, part in got:
                # a fast path reports the pairs it routed, None for all it was given
                if idx is None:
                    done.append((rest, part))
                    left[:] = False
                else:
                    done.append((idx if rest is None else rest[idx], part))
                    left[idx] = False
            rest = np.flatnonzero(left) if rest is None else rest[left]
    if rest is None or len(rest):
        reach = reach or _Reach(net, mask)
        sr, dr = (s, d) if rest is None else (s[rest], d[rest])
        ok = reach(sr, dr)
        if ok.all():
            done.append((rest, _generic(net, mask, sr, dr, split)))
        elif ok.any():
            ok = np.flatnonzero(ok)
            done.append((ok if rest is None else rest[ok], _generic(net, mask, sr[ok], dr[ok], split)))
    if len(done) == 1 and (done[0][0] is None or len(done[0][0]) == P):
        return done[0][1]
    return _merge(P, L, [(np.arange(P) if i is None else i, p) for i, p in done])


# ---------------------------------------------------------------------------------------
# Torus dimension-order routing
# ---------------------------------------------------------------------------------------
def _torus_dims(net: _Net) -> tuple[int, ...]:
    raw = net.G.graph.get("dims")
    if raw is None:
        raise BadInput("routing='dor' needs the graph attribute dims (like '8x12x12')")
    try:
        dims = tuple(int(p) for p in str(raw).lower().split("x"))
    except ValueError:
        raise BadInput(f"graph attribute dims={raw!r} is not ring lengths joined by x (like '8x12x12')") from None
    missing = [a for a in _AXES[:len(dims)] if a not in net.attr]
    if missing or len(dims) > len(_AXES):
        raise BadInput(f"routing='dor' on dims={raw!r} needs chip attributes {', '.join(_AXES[:len(dims)])}")
    return dims


def _dor_paths(net: _Net, s: np.ndarray, d: np.ndarray, split: str) -> tuple[_Part, np.ndarray]:
    """Dimension-order routes of every pair, and which pairs' paths are broken (their rows are not routes)."""
    lt = net.lt
    L, F = len(lt), len(s)
    dims = _torus_dims(net)
    nd = len(dims)
    N = int(np.prod(dims))
    coords = np.stack([net.attr[a] for a in _AXES[:nd]], axis=1)      # (n, nd), -1 for switches
    on_grid = net.is_chip & np.all((coords >= 0) & (coords < np.array(dims)), axis=1)
    flat = np.full(net.n, -1, np.int32 if N < 2**31 - 1 else np.int64)
    flat[on_grid] = np.ravel_multi_index(tuple(coords[on_grid].T), dims)
    # ring links: u -> v differing in one coordinate by +-1 (mod k)
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    both = on_grid[u] & on_grid[v]
    nbr = np.full((nd, 2, N), -1, np.int64)          # [dim, 0:+1 / 1:-1, flat position] -> link
    diff = (coords[v] - coords[u]) % np.array(dims)
    moved = (diff != 0).sum(axis=1)
    for i, k in enumerate(dims):
        if k == 1:
            continue
        sel = both & (moved == 1) & (diff[:, i] != 0)
        plus = sel & (diff[:, i] == 1)
        minus = sel & (diff[:, i] == k - 1)          # k == 2: the one bundle is both
        nbr[i, 0, flat[u[plus]]] = np.flatnonzero(plus)
        nbr[i, 1, flat[u[minus]]] = np.flatnonzero(minus)
    # Arc pieces: arc (i, P, e) runs along dimension i from the chip at flat position P
    # to the one e steps further (mod k), the shorter way (both ways, half each, at a tie).
    # Arc ids: bases[i] + P * (k - 1) + e - 1.  Only the arcs some flow uses are built.
    strides = [int(np.prod(dims[i + 1:])) for i in range(nd)]
    bases = np.cumsum([0] + [N * (k - 1) for k in dims])
    K = int(bases[-1])
    it = np.int32 if max(N * max(dims), K + 1) < 2**31 - 1 else np.int64   # int32 division is ~7x faster
    # pass 1, per flow by index arithmetic on flat positions, in chunks: moving along
    # dimension i, the dimensions before i already hold d's coordinates, the rest s's
    fs, fd = flat[s], flat[d]
    indptr = np.zeros(F + 1, np.int64)
    ind_chunks = []
    hops = np.zeros(F, np.int32)
    used = np.zeros(K, bool)
    step = 1 << 22
    for c0 in range(0, F, step):
        a_s = np.maximum(fs[c0:c0 + step], 0).astype(it)
        a_d = np.maximum(fd[c0:c0 + step], 0).astype(it)
        n_c = len(a_s)
        pids = np.full((n_c, nd), -1, it)
        h_c = np.zeros(n_c, np.int32)
        cnt = np.zeros(n_c, np.int32)
        for i, k in enumerate(dims):
            if k == 1:
                continue
            st = it(strides[i])
            a = (a_s // st) % it(k)
            e = (a_d // st - a) % it(k)
            block = st * it(k)                   # positions sharing the coordinates of dims < i
            start = a_s if i == 0 else (a_d // block) * block + a_s % block
            moved = e > 0
            pids[:, i] = np.where(moved, it(bases[i]) + start * it(k - 1) + e - it(1), it(-1))
            h_c += np.minimum(e, it(k) - e).astype(np.int32)
            cnt += moved
        hops[c0:c0 + n_c] = h_c
        indptr[c0 + 1:c0 + n_c + 1] = cnt
        chunk_ind = pids[pids >= 0]
        used[chunk_ind] = True
        ind_chunks.append(chunk_ind)
    indptr = np.cumsum(indptr)
    idx = np.concatenate(ind_chunks) if ind_chunks else np.zeros(0, it)
    del ind_chunks
    # the arcs used: links along each, by coordinate arithmetic
    p_rows, p_cols, p_vals = [], [], []
    arc_lat = np.zeros(K)
    broken = np.zeros(K, bool)
    for i, k in enumerate(dims):
        if k == 1:
            continue
        arcs = np.flatnonzero(used[bases[i]:bases[i + 1]])
        if not len(arcs):
            continue
        P, e = arcs // (k - 1), arcs % (k - 1) + 1
        a = (P // strides[i]) % k
        t = np.arange(k // 2)
        lsum = np.zeros((len(arcs), 2))
        for dr, length in ((0, e), (1, k - e)):
            take = length <= k - length                      # the shorter way (both at a tie)
            share = np.where(length * 2 == k, 0.5, 1.0)
            ok = take[:, None] & (t[None, :] < length[:, None])
            sign = 1 if dr == 0 else -1
            pos = P[:, None] + ((a[:, None] + sign * t[None, :]) % k - a[:, None]) * strides[i]
            link = nbr[i, dr, pos]
            row, col = np.nonzero(ok)
            lk = link[row, col]
            broken[bases[i] + arcs[row[lk < 0]]] = True
            good = lk >= 0
            p_rows.append(bases[i] + arcs[row[good]])
            p_cols.append(lk[good])
            p_vals.append(share[row[good]])
            lsum[:, dr] = np.bincount(row[good], weights=lt.latency_ns[lk[good]], minlength=len(arcs))
        arc_lat[bases[i] + arcs] = lsum.max(axis=1)          # the slower way at a tie
    pl = sp.csr_matrix((np.concatenate(p_vals) if p_vals else np.zeros(0),
                        (np.concatenate(p_rows) if p_rows else np.zeros(0, np.int64),
                         np.concatenate(p_cols) if p_cols else np.zeros(0, np.int64))), shape=(K, L))
    pl.sum_duplicates()                               # a ring of 2 at a tie: both halves on one bundle
    # pass 2: latency and broken arcs per flow; one product when every ring link is alike
    ring = nbr[nbr >= 0]
    ring_lat = lt.latency_ns[ring]
    bad = (fs < 0) | (fd < 0)
    if len(ring) and np.all(ring_lat == ring_lat[0]) and not broken.any():
        lat = hops * float(ring_lat[0])
    else:
        # row sums by reduceat; a sentinel after the last entry keeps every start valid
        counts = np.diff(indptr)
        first = indptr[:-1]
        lat = np.where(counts > 0, np.add.reduceat(np.append(arc_lat[idx], 0.0), first), 0.0)
        bad |= (counts > 0) & np.logical_or.reduceat(np.append(broken[idx], False), first)
    idt = np.int32 if max(K, len(idx)) < 2**31 - 1 else np.int64
    fp = sp.csr_matrix((F, K), dtype=float)
    fp.data, fp.indices, fp.indptr = np.ones(len(idx)), idx.astype(idt, copy=False), indptr.astype(idt)
    return _Part(fp, pl, np.ones(F, bool), hops, lat), bad


def _dor(net: _Net, s: np.ndarray, d: np.ndarray, split: str) -> _Part:
    """Dimension-order routes; pairs whose path lost a link or a chip take ECMP over what is left."""
    L, F = len(net.lt), len(s)
    part, bad = _dor_paths(net, s, d, split)
    if not bad.any():
        return part
    fp, pl, reach, hops, lat = part.fp, part.pl, part.reach, part.hops, part.lat
    good_idx = np.flatnonzero(~bad)
    bad_idx = np.flatnonzero(bad)
    keep = _Part(fp[good_idx], pl, reach[good_idx], hops[good_idx], lat[good_idx])
    alive = (s[bad_idx] >= 0) & (d[bad_idx] >= 0)
    fb = _route_on(net, np.ones(L, bool), s[bad_idx[alive]], d[bad_idx[alive]], split)
    return _merge(F, L, [(good_idx, keep), (bad_idx[alive], fb)])


# ---------------------------------------------------------------------------------------
# Tiered (Jalapeño) with rail-only relay
# ---------------------------------------------------------------------------------------
def _positions(net: _Net):
    """(rack index, in-rack position index) per node, -1 where not a racked chip; and the table."""
    rack = net.attr.get("rack", np.full(net.n, -1, np.int64)).copy()
    rack[~net.is_chip] = -1
    tray, col = net.attr.get("tray"), net.attr.get("column")
    chips_r = np.flatnonzero(rack >= 0)
    if tray is not None and col is not None and np.all(tray[chips_r] >= 0) and np.all(col[chips_r] >= 0):
        key = tray * (int(col.max()) + 1) + col
    else:
        # in-rack index: order of rank within the rack
        key = np.full(net.n, -1, np.int64)
        o = chips_r[np.lexsort((net.rank[chips_r], rack[chips_r]))]
        r_sorted = rack[o]
        first = np.searchsorted(r_sorted, r_sorted, "left")
        key[o] = np.arange(len(o)) - first
    rid_inv, racks = _compact(rack[chips_r])
    kid_inv, keys = _compact(key[chips_r])
    ridx = np.full(net.n, -1, np.int64)
    kidx = np.full(net.n, -1, np.int64)
    ridx[chips_r], kidx[chips_r] = rid_inv, kid_inv
    table = np.full((len(racks), len(keys)), -1, np.int64)
    table[rid_inv, kid_inv] = chips_r
    return ridx, kidx, table


def _relays(net: _Net, s, d, lreach: _Reach, greach: _Reach):
    """Relay chip per pair (s, d) of different racks, -1 where no chip of s's rack serves.

    First choice: the chip of s's rack at d's position in its rack; else the chip of
    s's rack with a path to d closest in rank to that position; it must differ from
    s and be reachable from s on the first-leg links.
    """
    ridx, kidx, table = _positions(net)
    rs, kd = ridx[s], kidx[d]
    ok_r = (rs >= 0) & (kd >= 0)
    if ok_r.all():                                         # the usual case: no masked copies
        m = table[rs, kd]
    else:
        m = np.full(len(s), -1, np.int64)
        m[ok_r] = table[rs[ok_r], kd[ok_r]]
    del kd, ok_r
    good = m >= 0
    if good.all():
        good = (m != s) & greach(m, d) & lreach(s, m)
    else:
        good[good] = (m[good] != s[good]) & greach(m[good], d[good]) & lreach(s[good], m[good])
    bad = np.flatnonzero(~good & (rs >= 0))
    m[~good] = -1
    if len(bad):
        # rare (degraded) cases: one search per (rack, destination), then per pair
        rank = net.rank
        order = np.lexsort((d[bad], rs[bad]))
        bad = bad[order]
        key = rs[bad] * net.n + d[bad]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.append(starts[1:], len(bad))
        for a0, a1 in zip(starts, ends):
            grp = bad[a0:a1]
            r, dd = rs[grp[0]], d[grp[0]]
            cands = table[r][table[r] >= 0]
            cands = cands[greach(cands, np.full(len(cands), dd))]
            if not len(cands):
                continue
            pos0 = table[r, kidx[dd]] if kidx[dd] >= 0 else -1
            target = rank[pos0] if pos0 >= 0 else rank[table[r][table[r] >= 0]].min() + max(kidx[dd], 0)
            cands = cands[np.lexsort((rank[cands], np.abs(rank[cands] - target)))]
            for f in grp:
                ok = (cands != s[f]) & lreach(np.full(len(cands), s[f]), cands)
                if ok.any():
                    m[f] = cands[np.argmax(ok)]
    return m


_MISSING = object()


def _relay_plan(net: _Net, s, d, lreach: _Reach, greach: _Reach):
    """Relay chips ``(m1, m2)`` per pair of different racks without a global path (-1: none).

    ``m1`` in s's rack (source side, tried first: s -> m1 local, m1 -> d global), else
    ``m2`` in d's rack (destination side: s -> m2 global, m2 -> d local, for a
    destination that lost its global links), else both (s -> m1 -> m2 -> d).
    """
    m1 = _relays(net, s, d, lreach, greach)
    m2 = np.full(len(s), -1, np.int64)
    left = m1 < 0
    if left.any():
        # the same choice seen from the destination (reachability is symmetric)
        m2[left] = _relays(net, d[left], s[left], lreach, greach)
    left = np.flatnonzero((m1 < 0) & (m2 < 0))
    if not len(left):
        return m1, m2
    ridx, kidx, table = _positions(net)
    rank = net.rank
    cache: dict = {}

    def one(x):
        return np.array([x], np.int64)

    def valid(f, a, b):
        return (a != s[f] and b != d[f] and lreach(one(s[f]), one(a))[0] and lreach(one(b), one(d[f]))[0])

    def closest(cands, r, k):
        pos0 = table[r, k] if k >= 0 else -1
        target = rank[pos0] if pos0 >= 0 else rank[cands].min()
        return cands[np.lexsort((rank[cands], np.abs(rank[cands] - target)))]

    for f in left:
        r1, r2 = ridx[s[f]], ridx[d[f]]
        if r1 < 0 or r2 < 0:
            continue
        key = (r1, r2, kidx[d[f]])
        got = cache.get(key, _MISSING)
        # "no relay" is cached too: for a rack pair cut off from each other it holds for
        # every pair of chips, and recomputing it per pair cost O(rack) Python calls each
        if got is _MISSING or (got is not None and not valid(f, *got)):
            got = None
            A = table[r1][table[r1] >= 0]
            A = A[(A != s[f]) & lreach(np.full(len(A), s[f]), A)]
            B = table[r2][table[r2] >= 0]
            B = B[(B != d[f]) & lreach(B, np.full(len(B), d[f]))]
            if len(A) and len(B):
                for a in closest(A, r1, kidx[d[f]]):
                    Bm = B[greach(np.full(len(B), a), B)]
                    if len(Bm):
                        got = (a, closest(Bm, r2, kidx[a])[0])
                        break
            cache[key] = got
        if got is not None:
            m1[f], m2[f] = got
    return m1, m2


def _tiered(net: _Net, s, d, split: str, tiers: str):
    """Jalapeño's tier rule with relays; returns (flow_piece, piece_link, reach, relay, hops, lat).

    Each pair is split into legs (a direct pair is one leg; a relayed pair two or three),
    the legs of a tier are deduplicated and routed together, and each flow's row is the
    sum of its legs' rows: every leg carries the whole flow, so conservation holds.
    """
    lt = net.lt
    L, F = len(lt), len(s)
    all_links = np.ones(L, bool)
    if tiers == "rule":
        rack = net.attr.get("rack", np.full(net.n, -1, np.int64))
        if len(rack) and -2**31 < rack.min() and rack.max() < 2**31 - 1:
            rack = rack.astype(np.int32)                   # the per-flow gathers below: half the bytes
        rack_s = rack[s]
        intra = rack_s == rack[d]
        intra &= rack_s >= 0
        del rack_s
        lmask, gmask = lt.tier == "local", lt.tier == "global"
        lreach, greach = _Reach(net, lmask), _Reach(net, gmask)
    else:
        intra = np.zeros(F, bool)
        lmask = gmask = all_links
        lreach = greach = _Reach(net, all_links)
    inter = ~intra
    # an inter-rack pair goes direct where the global tier joins it: every pair when it
    # joins all chips (an intact pod), else by the per-pair test
    if greach.joins(net.node_of_rank[net.node_of_rank >= 0]):
        need = np.zeros(F, bool)
    else:
        need = inter & ~greach(s, d)
    if need.any():
        m1 = np.full(F, -1, np.int64)
        m2 = np.full(F, -1, np.int64)
        m1[need], m2[need] = _relay_plan(net, s[need], d[need], lreach, greach)
        relay = np.where(m1 >= 0, m1, m2)
        fr = np.flatnonzero(relay >= 0)
        f1, f2 = np.flatnonzero(m1 >= 0), np.flatnonzero(m2 >= 0)
    else:
        m1 = m2 = relay = None                             # no relays: skip their bookkeeping
        fr = f1 = f2 = np.zeros(0, np.int64)
    fi, fg = np.flatnonzero(intra), np.flatnonzero(inter & ~need)
    del inter, need
    if relay is not None:
        ga = np.where(m1[fr] >= 0, m1[fr], s[fr])
        gb = np.where(m2[fr] >= 0, m2[fr], d[fr])
        m2_f2, m1_f1 = m2[f2], m1[f1]
    else:
        ga = gb = m2_f2 = m1_f1 = fr
    # every leg once: pairs on the local links (intra, relay legs in either rack), on the
    # global links (inter, relay middle legs); duplicates (an all-to-all's relay legs are
    # also direct pairs) are routed once

    def cat(*arrs):
        arrs = [x for x in arrs if len(x)]
        return arrs[0] if len(arrs) == 1 else np.concatenate(arrs) if arrs else np.zeros(0, np.int64)

    legs = [(lmask, lreach, cat(s[fi], s[f1], m2_f2), cat(d[fi], m1_f1, d[f2])),
            (gmask, greach, cat(s[fg], ga), cat(d[fg], gb))]
    n_local = len(legs[0][2])
    if tiers == "any":
        legs = [(all_links, lreach, cat(legs[0][2], legs[1][2]), cat(legs[0][3], legs[1][3]))]
    # rows[i]: the row of each leg in its tier's part; None: row i (no duplicates to merge)
    parts, rows = [], []
    for mask, reach_fn, a, b in legs:
        if len(fr):
            inv = a * net.n
            inv += b
            keys = _compact_inplace(inv, net.n * net.n)
            a, b = keys // net.n, keys % net.n
        else:
            inv = None if tiers == "rule" else np.arange(len(a))
        parts.append(_route_on(net, mask, a, b, split, reach_fn))
        rows.append(inv)
    del legs, a, b
    if tiers == "any":
        k_l = k_g = 0
        r_l, r_g = rows[0][:n_local], rows[0][n_local:]
    else:
        k_l, k_g = 0, 1
        r_l, r_g = rows
    nI, n1, nG = len(fi), len(f1), len(fg)
    lp, gp = parts[k_l], parts[k_g]
    if r_l is None:                                        # no relays: the parts route fi and fg in order
        rl_i = rg_d = None
        rl_1 = rl_2 = rg_r = fr
    else:
        rl_i, rl_1, rl_2 = r_l[:nI], r_l[nI:nI + n1], r_l[nI + n1:]
        rg_d, rg_r = r_g[:nG], r_g[nG:]

    def rows_of(x, r):
        return x if r is None else x[r]

    reach = np.zeros(F, bool)
    hops = np.zeros(F, np.int32)
    lat = np.zeros(F)
    reach[fi], hops[fi], lat[fi] = rows_of(lp.reach, rl_i), rows_of(lp.hops, rl_i), rows_of(lp.lat, rl_i)
    reach[fg], hops[fg], lat[fg] = rows_of(gp.reach, rg_d), rows_of(gp.hops, rg_d), rows_of(gp.lat, rg_d)
    reach[fr], hops[fr], lat[fr] = gp.reach[rg_r], gp.hops[rg_r], gp.lat[rg_r]
    reach[f1] &= lp.reach[rl_1]
    hops[f1] += lp.hops[rl_1]
    lat[f1] += lp.lat[rl_1]
    reach[f2] &= lp.reach[rl_2]
    hops[f2] += lp.hops[rl_2]
    lat[f2] += lp.lat[rl_2]
    contrib = [(k_l, fi, rl_i), (k_l, f1, rl_1), (k_l, f2, rl_2), (k_g, fg, rg_d), (k_g, fr, rg_r)]
    n_contrib = len(contrib)
    # still without a route under the rule: any shortest path over every tier
    rest = np.flatnonzero(~reach)
    if len(rest) and tiers == "rule":
        allr = _Reach(net, all_links)
        rest = rest[allr(s[rest], d[rest])]
        if len(rest):
            ap = _route_on(net, all_links, s[rest], d[rest], split, allr)
            parts.append(ap)
            contrib.append((len(parts) - 1, rest, None))
            reach[rest], hops[rest], lat[rest] = ap.reach, ap.hops, ap.lat
            if relay is not None:
                relay[rest] = -1
    # drop rows of flows that stayed unreachable or were rerouted by the fallback
    if len(rest) or not reach.all():
        keep = reach.copy()
        keep[rest] = False
        contrib = [(k, f[keep[f]], (np.arange(len(f)) if r is None else r)[keep[f]])
                   for k, f, r in contrib[:n_contrib]] + contrib[n_contrib:]
    fp, pl = _assemble(F, L, parts, contrib, disjoint=relay is None)
    relay2 = None
    if relay is not None:
        relay[~reach] = -1
        relay2 = np.where((m1 >= 0) & (m2 >= 0) & (relay >= 0), m2, -1)   # both sides relay
    return fp, pl, reach, relay, hops, lat, relay2


# ---------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------
def _chip_nodes(G: nx.Graph, src, dst, split: str, tiers: str, links: LinkTable | None):
    """Check a route request; return (policy, lt, net, src ranks, dst ranks, src nodes, dst nodes).

    A rank no chip carries maps to node -1.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r}; choose one of: {', '.join(SPLITS)}")
    if tiers not in TIER_MODES:
        raise ValueError(f"tiers={tiers!r}; choose one of: {', '.join(TIER_MODES)}")
    policy = G.graph.get("routing", "ecmp")
    if policy not in ("ecmp", "tiered", "dor"):
        raise BadInput(f"routing policy {policy!r} is not one of: dor, ecmp, tiered")
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

    s, d = node(src_r), node(dst_r)
    return policy, lt, net, src_r, dst_r, s, d


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
    policy, lt, net, src_r, dst_r, s, d = _chip_nodes(G, src, dst, split, tiers, links)
    L, F = len(lt), len(src_r)
    ok = (s >= 0) & (d >= 0)
    all_alive = bool(ok.all())
    alive = None if all_alive else np.flatnonzero(ok)
    sa, da = (s, d) if all_alive else (s[alive], d[alive])
    del ok
    relay_a = relay2_a = None
    if policy == "dor":
        part = _dor(net, sa, da, split)
    elif policy == "tiered":
        fp, pl, reach_a, relay_a, hops_a, lat_a, relay2_a = _tiered(net, sa, da, split, tiers)
        part = _Part(fp, pl, reach_a, hops_a, lat_a)
    else:
        part = _route_on(net, np.ones(L, bool), sa, da, split)
    del sa, da, s, d
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


@dataclass(frozen=True)
class Loads:
    """Bytes per link of a set of flows (see :func:`link_loads`).

    Attributes
    ----------
    link_bytes : numpy.ndarray of float64, shape (L,)
        Bytes each link of the table carries (reachable flows only).
    reachable : numpy.ndarray of bool, shape (F,)
    hops : numpy.ndarray of int32, shape (F,)
    latency_ns : numpy.ndarray of float64, shape (F,)
        As in :class:`Routes` (0 where unreachable).
    """

    link_bytes: np.ndarray
    reachable: np.ndarray
    hops: np.ndarray
    latency_ns: np.ndarray


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
    policy, lt, net, src_r, dst_r, s, d = _chip_nodes(G, src, dst, split, tiers, links)
    F = len(src_r)
    w = np.broadcast_to(np.asarray(bytes_per_flow, dtype=np.float64), (F,))
    if policy != "dor":
        r = route(G, src_r, dst_r, split=split, tiers=tiers, links=lt)
        ok = np.asarray(r.reachable)
        lb = r.piece_link.T @ (r.flow_piece.T @ np.where(ok, w, 0.0))
        return Loads(np.asarray(lb), ok, r.hops, r.latency_ns)
    reach = np.zeros(F, bool)
    hops = np.zeros(F, np.int32)
    lat = np.zeros(F)
    alive = np.flatnonzero((s >= 0) & (d >= 0))
    part, bad = _dor_paths(net, s[alive], d[alive], split)
    good, rerouted = alive[~bad], alive[bad]
    fp = part.fp[np.flatnonzero(~bad)]
    lb = np.asarray(part.pl.T @ (fp.T @ w[good]))
    reach[good], hops[good], lat[good] = True, part.hops[~bad], part.lat[~bad]
    if len(rerouted):
        more, r_ok, r_hops, r_lat = _ecmp_loads(net, np.ones(len(lt), bool), s[rerouted], d[rerouted],
                                                np.ascontiguousarray(w[rerouted]), split)
        lb = lb + more
        reach[rerouted], hops[rerouted], lat[rerouted] = r_ok, np.where(r_ok, r_hops, 0), np.where(r_ok, r_lat, 0)
    return Loads(lb, reach, hops, lat)
