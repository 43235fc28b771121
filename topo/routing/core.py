"""Shared routing machinery: the link table, node arrays, route parts and their assembly, DAG walkers.

Every policy module (:mod:`.ecmp`, :mod:`.leaf`, :mod:`.tiered`, :mod:`.torus`) builds
its routes from these pieces:

* :class:`LinkTable` / :func:`link_table`: the directed links of the forwarding graph;
* :class:`Routes`, :class:`Loads`: what :func:`~fabricsim.topo.routing.route` and
  :func:`~fabricsim.topo.routing.link_loads` return;
* :class:`Request`: a checked route request (ranks, their nodes, the node arrays);
* :class:`PolicyRoutes`: what a policy's router returns (a part plus its relays);
* ``_Net`` (node arrays per graph, memoised on the link table), ``_Part`` (routes of
  P pairs on their own pieces), ``_assemble`` / ``_merge`` (stacking parts into one
  factored share matrix), ``_Reach`` (exact reachability through forwarding nodes),
  ``_Dags`` (per-destination shortest-path DAGs by chunks, yielding :class:`DagChunk`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..builders import AXES as _AXES   # torus coordinate attributes, x slowest
from ..contract import CAPACITY_GBPS, CHIP, FORWARDS, KIND, LANE_GBPS, LANES, LATENCY_NS, RANK, SWITCH, TIER, \
    forwarding_graph
from ..errors import BadInput

__all__ = ["LinkTable", "link_table", "Routes", "Loads", "Request", "PolicyRoutes", "DagChunk", "SPLITS",
           "TIER_MODES"]

SPLITS = ("equal", "capacity")
TIER_MODES = ("rule", "any")
# Work arrays per destination chunk of the generic router stay under this many cells.
_CHUNK_CELLS = 4_000_000
# Unweighted shortest distances by breadth-first search from this many search nodes up (Dijkstra below).
_BFS_NODES = 1024
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
    from ..graphcache import memo          # cached while G is pinned (topo.graphcache)
    return memo(G, ("link_table",), lambda: _build_link_table(G))


def _build_link_table(G: nx.Graph) -> LinkTable:
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


def _distinct(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values of ``x``, by a sort (numpy 2's hashing ``np.unique`` is several times slower on big arrays)."""
    srt = np.sort(np.ravel(x))
    if len(srt) < 2:
        return srt
    keep = np.empty(len(srt), bool)
    keep[0] = True
    np.not_equal(srt[1:], srt[:-1], out=keep[1:])
    return srt[keep]


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
def _reach(net: "_Net", mask: np.ndarray) -> "_Reach":
    """``_Reach(net, mask)``, cached while ``net.G`` is pinned and ``net`` stands on its cached link table."""
    from ..graphcache import is_pinned, memo
    if is_pinned(net.G) and net.lt is link_table(net.G):
        m = np.asarray(mask, dtype=bool)
        return memo(net.G, ("reach", m.tobytes()), lambda: _Reach(net, m))
    return _Reach(net, mask)


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


def _hop_dist(S: sp.csr_matrix, roots: np.ndarray, n: int, unweighted: bool) -> np.ndarray:
    """Shortest distances from each root along the edges of ``S``: shape (len(roots), n), inf where none.

    Only the first ``n`` columns (nodes) are kept.  Unweighted search graphs of 1,024
    nodes or more: breadth-first search (:func:`_bfs_levels`, about twice as fast as
    scipy's Dijkstra there); else Dijkstra (the cheaper call on small graphs).
    """
    from scipy.sparse import csgraph   # imported on use: it costs ~50 ms at start-up
    roots = np.asarray(roots, np.int64)
    if unweighted and S.shape[0] >= _BFS_NODES:
        lev = _bfs_levels(S, roots, n)
        dist = lev.astype(np.float64)
        dist[lev < 0] = np.inf
        return dist
    dist = csgraph.shortest_path(S, method="D", directed=True, unweighted=unweighted, indices=roots)
    return np.ascontiguousarray(dist[:, :n]) if dist.shape[1] != n else dist


# Breadth-first levels kept per search graph (its structure's digest), per root: a phase priced
# step by step (pairwise all-to-all: 63 steps of 1,152 pairs on Boardfly) searches the same
# graph from the same roots at every step (6.1 of 12.5 s of its price, measured).  Bounded in
# cells (int32 entries; 2**25 = 128 MiB) and graphs (I: bounds, not facts).
_LEVELS_KEPT_CELLS = 1 << 25
_LEVELS_KEPT_GRAPHS = 2
_LEVELS: dict[bytes, dict[int, np.ndarray]] = {}


def _graph_digest(S: sp.csr_matrix, n: int) -> bytes:
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    h.update(np.asarray([S.shape[0], S.shape[1], n], np.int64).tobytes())
    for a in (S.indptr, S.indices, S.data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def _bfs_levels_kept(S: sp.csr_matrix, roots: np.ndarray, n: int) -> np.ndarray:
    """:func:`_bfs_levels` through the per-graph store (a fresh array: callers may write to it)."""
    roots = np.asarray(roots, np.int64)
    if len(roots) * n > _LEVELS_KEPT_CELLS:
        return _bfs_levels(S, roots, n)
    key = _graph_digest(S, n)
    rows = _LEVELS.pop(key, None)
    if rows is None:
        rows = {}
    _LEVELS[key] = rows                          # most recent last
    while len(_LEVELS) > _LEVELS_KEPT_GRAPHS:
        _LEVELS.pop(next(iter(_LEVELS)))
    want = roots.tolist()
    have = {r: rows.get(r) for r in want}        # read once: another thread may clear the store meanwhile
    missing = [r for r, row in have.items() if row is None]
    if missing:
        got = _bfs_levels(S, np.asarray(missing, np.int64), n)
        if (len(rows) + len(missing)) * n > _LEVELS_KEPT_CELLS:
            rows.clear()
        for r, row in zip(missing, got):
            have[r] = rows[r] = row
    return np.stack([have[r] for r in want]) if want else np.full((0, n), -1, np.int32)


def _hop_levels(S: sp.csr_matrix, roots: np.ndarray, n: int, unweighted: bool) -> np.ndarray:
    """:func:`_hop_dist` as whole numbers of hops: int32 (or int64), -1 where none."""
    if unweighted and S.shape[0] >= _BFS_NODES:
        return _bfs_levels_kept(S, roots, n)
    dist = _hop_dist(S, roots, n, unweighted)
    top = dist[np.isfinite(dist)].max(initial=0)
    return np.where(np.isfinite(dist), dist, -1).astype(np.int32 if top < 2**31 - 1 else np.int64)


def _bfs_levels(S: sp.csr_matrix, roots: np.ndarray, n: int) -> np.ndarray:
    """Breadth-first levels (edges of ``S`` from each root): shape (len(roots), n) int32, -1 where none.

    One scipy breadth-first search per root gives its visiting order and each node's
    predecessor; the levels follow for a batch of roots at once (small enough to stay
    in cache).  The order visits the children of each node in the order the nodes were
    visited, so the positions of the predecessors never decrease along it, and level
    ``k + 1`` is the run of the order whose predecessors lie in level ``k``: a search
    for the first predecessor position past level ``k`` ends it.
    """
    from scipy.sparse import csgraph   # imported on use: it costs ~50 ms at start-up
    roots = np.asarray(roots).tolist()
    c, ns = len(roots), S.shape[0]
    out = np.full((c, n), -1, np.int32)
    w = ns + 1                                      # a row of node columns and one for the padding
    batch = max(1, min(c, (1 << 17) // w))
    order = np.empty((batch, ns), np.int64)         # visiting order, padded with the padding node ns
    pred = np.empty((batch, w), np.int64)           # predecessor by node (-9999: none)
    pos = np.empty(batch * w, np.int64)             # flat (row, node) -> position in the row's order
    size = np.empty(batch, np.int64)
    ramp = np.arange(ns, dtype=np.int64)
    for r0 in range(0, c, batch):
        m = min(batch, c - r0)
        order[:m] = ns
        for i in range(m):
            o, p = csgraph.breadth_first_order(S, roots[r0 + i], directed=True, return_predecessors=True)
            size[i] = len(o)
            order[i, :len(o)] = o
            pred[i, :ns] = p
        pred[:m, ns] = ns
        off = (np.arange(m, dtype=np.int64) * w)[:, None]
        at = order[:m] + off                        # flat (row, node) of each position
        pos[at] = ramp
        pos[off.ravel() + ns] = ns
        # each position's predecessor's position (the padding: ns, past every level)
        parent = pos[np.maximum(pred[:m].ravel()[at[:, 1:]], 0) + off]
        parent[order[:m, 1:] == ns] = ns
        flat = (parent + off).ravel()               # rows one after another: sorted throughout
        starts = np.zeros((m, w), np.int32)         # 1 where a level starts (after level 0)
        base = off.ravel()
        shift = np.arange(m, dtype=np.int64) * (ns - 1)
        b = np.ones(m, np.int64)
        live = b < size[:m]
        while live.any():
            starts.ravel()[base[live] + b[live]] = 1
            b = np.where(live, 1 + np.searchsorted(flat, b + base, "left") - shift, b)
            live = b < size[:m]
        level = np.cumsum(starts[:, :ns], axis=1, dtype=np.int32)
        got = np.full((m, w), -1, np.int32)
        got.ravel()[at] = level
        out[r0:r0 + m] = got[:, :n]
    return out


# ---------------------------------------------------------------------------------------
# Generic ECMP (any graph): per-destination shortest-path DAGs
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DagChunk:
    """The shortest-path DAGs of one chunk of destinations (what iterating ``_Dags`` yields).

    Attributes
    ----------
    dc : numpy.ndarray, shape (c,)
        Destination node indices of the chunk.
    dist : numpy.ndarray, shape (c, n)
        Hop distance of every node to each destination (inf where none).
    jj, kk : numpy.ndarray, shape (E,)
        DAG edges: destination row and link position (into ``_Dags.la``).
    key_u, key_v : numpy.ndarray, shape (E,)
        ``row * n + tail`` and ``row * n + head`` node of each edge.
    frac : numpy.ndarray, shape (E,)
        Each edge's split of its tail's traffic.
    pidx : numpy.ndarray
        Indices of the pairs whose destination is in the chunk.
    """

    dc: np.ndarray
    dist: np.ndarray
    jj: np.ndarray
    kk: np.ndarray
    key_u: np.ndarray
    key_v: np.ndarray
    frac: np.ndarray
    pidx: np.ndarray


class _Dags:
    """Per-destination shortest-path DAGs on the links in ``mask``, by chunks of destinations.

    Iterating yields one :class:`DagChunk` per chunk of destinations.
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

    def dist(self, dc: np.ndarray) -> np.ndarray:
        """Hop distance of every node to each destination node in ``dc``: shape (len(dc), n), inf where none.

        Distances run through forwarding nodes only (a non-forwarding node ends a path
        or starts one, never relays), counting each link's ``hops``.
        """
        starts = np.where(self.fwd[dc], dc, self.outid[dc])
        dist = _hop_dist(self.S, starts, self.n, self.unweighted)
        dist[np.arange(len(dc)), dc] = 0.0
        return dist

    def __iter__(self):
        n, fwd, lsrc, ldst, lw = self.n, self.fwd, self.lsrc, self.ldst, self.lw
        for c0 in range(0, len(self.dests), self.chunk):
            dc = self.dests[c0:c0 + self.chunk]
            c = len(dc)
            dist = self.dist(dc)
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
            yield DagChunk(dc, dist, jj, kk, key_u, key_v, frac, pidx)

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




@dataclass(frozen=True)
class Request:
    """A checked route request (see :func:`~fabricsim.topo.routing.route`).

    Attributes
    ----------
    policy : str
        ``G.graph["routing"]`` (``ecmp`` when absent), a key of ``routing.POLICIES``.
    links : LinkTable
    net : _Net
        Node arrays of the graph in ``links``' node order.
    src_rank, dst_rank : numpy.ndarray of int64, shape (F,)
    src_node, dst_node : numpy.ndarray of int64, shape (F,)
        Node index of each rank, -1 where no chip carries it (a failed chip).
    """

    policy: str
    links: LinkTable
    net: "_Net"
    src_rank: np.ndarray
    dst_rank: np.ndarray
    src_node: np.ndarray
    dst_node: np.ndarray


@dataclass(frozen=True)
class PolicyRoutes:
    """What a policy's router returns for pairs of node indices.

    Attributes
    ----------
    part : _Part
        Routes of the pairs (pieces, reachability, hops, latency).
    relay, relay2 : numpy.ndarray of int64, optional
        Node index of the first (second) relay chip per pair, -1 where none; ``None``
        when the policy relays no pair.
    """

    part: "_Part"
    relay: np.ndarray | None = None
    relay2: np.ndarray | None = None

    @classmethod
    def on_paths(cls, net: "_Net", paths) -> "PolicyRoutes":
        """Routes that send each pair's whole flow along one path (for a policy written outside this package).

        Parameters
        ----------
        net : node arrays of the fabric (what a router is called with)
        paths : sequence of array_like of int, or None
            Per pair, the link indices (rows of ``net.lt``) of its path, source to
            destination; None where the pair has no route.

        Returns
        -------
        PolicyRoutes
            One piece per pair; hops and latency summed along the path.
        """
        lt = net.lt
        L, P = len(lt), len(paths)
        reach = np.array([p is not None for p in paths], bool)
        links = [np.asarray(p if p is not None else (), np.int64) for p in paths]
        sizes = np.array([len(x) for x in links], np.int64)
        if any(len(x) and (x.min() < 0 or x.max() >= L) for x in links):
            raise BadInput(f"a path names a link outside 0..{L - 1}")
        p_rows = np.repeat(np.arange(P), sizes)
        p_cols = np.concatenate(links) if P else np.zeros(0, np.int64)
        hops = np.array([int(np.asarray(lt.hops)[x].sum()) for x in links], np.int32)
        lat = np.array([float(np.asarray(lt.latency_ns)[x].sum()) for x in links])
        on = np.flatnonzero(reach)
        return cls(_coo_part(P, P, L, on, on, np.ones(len(on)), p_rows, p_cols, np.ones(len(p_cols)), reach,
                             hops, lat))


# Public names for what the fold and adaptive pricing outside this package read (collectives/whatif/orbits.py,
# collectives/adaptive.py): a fabric's node arrays in a link table's order, and path reachability on a link mask.
node_arrays = _net
Reach = _Reach
