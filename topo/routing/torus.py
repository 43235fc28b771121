"""Policy ``dor``: dimension-order routing on a torus.

Chips carry ``x, y, z, w`` (``builders.AXES``) and the graph ``dims``: each dimension
in turn, along the shorter arc of its ring; an arc of exactly half a ring splits half
each way.  Pieces: one per ring arc (with its tie split inside), <= 1 per dimension.
Pairs whose DOR path crosses a missing link or chip fall back to ECMP on what is left
(:func:`.ecmp._route_on`; :func:`loads_dor` pushes their demand down shortest-path
DAGs instead, for a link-load bound): the arcs a missing link breaks are found from
the links (:func:`_broken_arcs`), such a pair keeps one slot in its row and its ECMP
route, one piece when few pairs share its destination (:mod:`.cone`), takes it.

Symmetry fold (:func:`fold_translations`): translations of an intact torus under which
the groups tile it the same way; :func:`flows_through` lists the flows whose routes a
failure touches, for the intact classes' correction.  :func:`fold_stabilizer` keeps a
coarser quotient on a torus with failed or degraded links: the per-axis reflections (and
translations) that map the failures onto themselves; its classes are a product of
per-axis classes (:class:`_Grid`), whose arcs are sums of per-axis terms.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..builders import AXES as _AXES   # torus coordinate attributes, x slowest
from ..errors import BadInput
from .core import Loads, PolicyRoutes, Request, _merge, _net, _Net, _Part
from .ecmp import _ecmp_loads, _route_on
from .quotient import Fold, Quotient, _fold, _uniform_within

__all__ = ["route_dor", "loads_dor", "fold_translations", "fold_stabilizer", "flows_through"]


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


def _broken_arcs(nbr: np.ndarray, dims, strides, bases, K: int) -> np.ndarray:
    """Which arcs (ids as in :func:`_dor_paths`) cross a missing ring link, shape (K,) bool.

    Enumerated from the missing links (few on a degraded torus) rather than from the
    arcs: a missing link from coordinate ``a`` to ``a + 1`` of dimension ``i`` lies on
    the arcs taking the ``+`` way (``2 e <= k``) that start ``t < e`` steps before it;
    one to ``a - 1`` on those taking the ``-`` way (length ``k - e``, ``2 (k - e) <= k``)
    that start ``t < k - e`` steps after it.
    """
    broken = np.zeros(K, bool)
    for i, k in enumerate(dims):
        if k == 1:
            continue
        half = k // 2
        # (t, length) with t < length <= k / 2: steps before the link, length of the way
        t, length = np.nonzero(np.arange(half)[:, None] < np.arange(1, half + 1)[None, :])
        length = length + 1
        for dr, sign in ((0, 1), (1, -1)):
            miss = np.flatnonzero(nbr[i, dr] < 0)
            if not len(miss):
                continue
            a = (miss // strides[i]) % k
            b = (a[:, None] - sign * t[None, :]) % k                       # the arc's start coordinate
            P = miss[:, None] + (b - a[:, None]) * strides[i]
            e = length[None, :] if dr == 0 else k - length[None, :]
            broken[(bases[i] + P * (k - 1) + e - 1).ravel()] = True
    return broken


def _pass1_pairs(ctx, s, d, flat, hops):
    """Arcs of each pair by index arithmetic on flat positions, in chunks that stay in cache.

    Moving along dimension i, the dimensions before i already hold d's coordinates, the
    rest s's.  Yields ``(first pair, arcs (n, dims) with -1 for none, arc count, broken)``
    per chunk, the arc array reused; fills ``hops``.
    """
    dims, strides, bases, K, it, pt, broken = ctx
    nd, F = len(dims), len(s)
    step = 1 << 18
    pids = np.empty((min(step, F), nd), it)
    for c0 in range(0, F, step):
        fs, fd = flat[s[c0:c0 + step]], flat[d[c0:c0 + step]]
        n_c = len(fs)
        bad_c = (fs < 0) | (fd < 0)
        a_s = np.maximum(fs, 0).astype(it, copy=False)
        a_d = np.maximum(fd, 0).astype(it, copy=False)
        pid_c = pids[:n_c]
        pid_c.fill(-1)
        h_c = hops[c0:c0 + n_c]
        h_c.fill(0)
        cnt = np.zeros(n_c, pt)
        for i, k in enumerate(dims):
            if k == 1:
                continue
            st = it(strides[i])
            a = (a_s // st) % it(k)
            e = (a_d // st - a) % it(k)
            block = st * it(k)                   # positions sharing the coordinates of dims < i
            start = a_s if i == 0 else (a_d // block) * block + a_s % block
            moved = e > 0
            pid = np.where(moved, it(bases[i]) + start * it(k - 1) + e - it(1), it(-1))
            if broken is not None:
                bad_c |= broken[np.maximum(pid, 0)] & moved
            pid_c[:, i] = pid
            h_c += np.minimum(e, it(k) - e).astype(np.int32, copy=False)
            cnt += moved
        yield c0, pid_c, cnt, bad_c


@dataclass(frozen=True)
class _Grid:
    """Pairs of positions as a product of per-axis classes: what :func:`_product_classes` enumerates.

    Pair ``(c_0, ..., c_{nd-1})`` (row-major, those where ``keep``) runs from the position
    with coordinates ``src[a][c_a]`` to the one with ``dst[a][c_a]``.
    """

    src: tuple      # per axis: sender coordinate of each class
    dst: tuple      # per axis: receiver coordinate of each class
    keep: np.ndarray   # bool, the grid's shape: the pair is one (not equal on every axis)


def _pass1_grid(ctx, grid: _Grid, hops):
    """:func:`_pass1_pairs` for the pairs of a :class:`_Grid`, by per-axis terms.

    The arc of pair ``c`` along dimension ``i`` is ``bases[i] + start * (k - 1) + e - 1``,
    ``start`` summing ``dst`` coordinates (axes before ``i``) and ``src`` ones (the rest)
    times their strides, ``e`` the steps along ``i``: a sum of one term per axis, each a
    vector over that axis's classes, added by broadcasting over slabs of the first axis.
    """
    dims, strides, bases, K, it, pt, broken = ctx
    nd = len(dims)
    none = -(K + 2)                                     # the term of a class that does not move: sums < 0
    terms = []
    for i, k in enumerate(dims):
        if k == 1:
            terms.append(None)
            continue
        e = (grid.dst[i] - grid.src[i]) % k
        row = []
        for j in range(nd):
            coord = grid.dst[j] if j < i else grid.src[j]
            t = coord * (strides[j] * (k - 1))
            if j == i:
                t = np.where(e > 0, t + bases[i] + e - 1, none)
            row.append(t.astype(it))
        terms.append(row)
    hop_terms = [np.minimum((g_d - g_s) % k, k - (g_d - g_s) % k).astype(np.int32)
                 for g_s, g_d, k in zip(grid.src, grid.dst, dims)]
    per_slab = int(np.prod(grid.keep.shape[1:]))
    slabs = max(1, (1 << 18) // max(per_slab, 1))

    def outer(parts, a0, a1):
        out = None
        for j, v in enumerate(parts):
            v = v[a0:a1] if j == 0 else v
            v = v.reshape((1,) * j + (-1,) + (1,) * (nd - j - 1))
            out = v if out is None else out + v
        return out

    c0 = 0
    for a0 in range(0, grid.keep.shape[0], slabs):
        a1 = a0 + slabs
        keep = grid.keep[a0:a1].ravel()
        n_c = int(keep.sum())
        pid_c = np.full((n_c, nd), -1, it)
        cnt = np.zeros(n_c, pt)
        bad_c = np.zeros(n_c, bool)
        for i, row in enumerate(terms):
            if row is None:
                continue
            pid = outer(row, a0, a1).ravel()[keep]
            moved = pid >= 0
            pid = np.where(moved, pid, it(-1))
            if broken is not None:
                bad_c |= broken[np.maximum(pid, 0)] & moved
            pid_c[:, i] = pid
            cnt += moved
        hops[c0:c0 + n_c] = outer(hop_terms, a0, a1).ravel()[keep]
        yield c0, pid_c, cnt, bad_c
        c0 += n_c


def _dor_paths(net: _Net, s: np.ndarray, d: np.ndarray, split: str, grid=None) -> tuple[_Part, np.ndarray]:
    """Dimension-order routes of every pair, and which pairs' paths are broken.

    ``grid``: the pairs are the classes of a :class:`_Grid` (in its order), whose arcs
    are sums of per-axis terms (:func:`_pass1_grid`) rather than arithmetic per pair.

    A broken pair (its path crosses a missing link or chip) gets one placeholder entry
    instead of its arcs: the last piece column, whose ``piece_link`` row is empty (there
    only when some pair is broken).  :func:`_dor` puts the pair's rerouted piece in that
    slot; a link-load sum may use the rows as they are (a placeholder carries nothing).
    """
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
    broken = _broken_arcs(nbr, dims, strides, bases, K)
    any_broken = bool(broken.any())
    it = np.int32 if max(N * max(dims), K + 1) < 2**31 - 1 else np.int64   # int32 division is ~7x faster
    moving = sum(1 for k in dims if k > 1)
    pt = np.int32 if F * moving < 2**31 - 1 else np.int64
    # pass 1, per flow by index arithmetic on flat positions, in chunks small enough to
    # stay in cache (and be reused): moving along dimension i, the dimensions before i
    # already hold d's coordinates, the rest s's.  The outputs are filled in place; the
    # piece list is allocated at its bound (<= 1 piece per dimension) and only its used
    # prefix is ever touched.
    indices = np.empty(F * moving, it)
    indptr = np.empty(F + 1, pt)
    indptr[0] = 0
    hops = np.empty(F, np.int32)
    bad = np.zeros(F, bool)
    used = np.zeros(K + 1, bool)                      # + the placeholder
    at = 0
    ctx = (dims, strides, bases, K, it, pt, broken if any_broken else None)
    chunks = _pass1_pairs(ctx, s, d, flat, hops) if grid is None else _pass1_grid(ctx, grid, hops)
    for c0, pid_c, cnt, bad_c in chunks:
        n_c = len(cnt)
        if bad_c.any():
            # a broken pair keeps one slot, the placeholder piece K, for its rerouted piece
            pid_c[bad_c] = -1
            pid_c[bad_c, 0] = K
            cnt[bad_c] = 1
            bad[c0:c0 + n_c] = bad_c
        np.cumsum(cnt, out=indptr[c0 + 1:c0 + n_c + 1])
        indptr[c0 + 1:c0 + n_c + 1] += at
        chunk_ind = pid_c[pid_c >= 0]
        used[chunk_ind] = True
        indices[at:at + len(chunk_ind)] = chunk_ind
        at += len(chunk_ind)
    idx = indices[:at]
    # the arcs used (by unbroken pairs): links along each, by coordinate arithmetic
    p_rows, p_cols, p_vals = [], [], []
    arc_lat = np.zeros(K + 1)                        # + the placeholder, 0
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
            p_rows.append(bases[i] + arcs[row])
            p_cols.append(lk)
            p_vals.append(share[row])
            lsum[:, dr] = np.bincount(row, weights=lt.latency_ns[lk], minlength=len(arcs))
        arc_lat[bases[i] + arcs] = lsum.max(axis=1)          # the slower way at a tie
    used = used[:K]
    n_pieces = K + 1 if bad.any() else K
    pl = sp.csr_matrix((np.concatenate(p_vals) if p_vals else np.zeros(0),
                        (np.concatenate(p_rows) if p_rows else np.zeros(0, np.int64),
                         np.concatenate(p_cols) if p_cols else np.zeros(0, np.int64))), shape=(n_pieces, L))
    pl.sum_duplicates()                               # a ring of 2 at a tie: both halves on one bundle
    # pass 2: latency per flow; one product when every ring link is alike
    ring = nbr[nbr >= 0]
    ring_lat = lt.latency_ns[ring]
    if len(ring) and np.all(ring_lat == ring_lat[0]):
        lat = hops * float(ring_lat[0])
    else:
        # row sums by reduceat; a sentinel after the last entry keeps every start valid
        counts = np.diff(indptr)
        lat = np.where(counts > 0, np.add.reduceat(np.append(arc_lat[idx], 0.0), indptr[:-1]), 0.0)
    idt = np.int32 if max(n_pieces, len(idx)) < 2**31 - 1 else np.int64
    fp = sp.csr_matrix((F, n_pieces), dtype=float)
    fp.data, fp.indices, fp.indptr = np.ones(len(idx)), idx.astype(idt, copy=False), indptr.astype(idt, copy=False)
    return _Part(fp, pl, ~bad, hops, lat), bad


def _dor(net: _Net, s: np.ndarray, d: np.ndarray, split: str, grid: _Grid | None = None) -> _Part:
    """Dimension-order routes; pairs whose path lost a link or a chip take ECMP over what is left.

    ``grid``: the pairs ``(s, d)`` are those of a :class:`_Grid`, in its order (their
    arcs are then found per axis).
    """
    L, F = len(net.lt), len(s)
    part, bad = _dor_paths(net, s, d, split, grid)
    if not bad.any():
        return part
    fp, pl = part.fp, part.pl
    K = pl.shape[0] - 1                              # the placeholder piece
    bad_idx = np.flatnonzero(bad)
    alive = (s[bad_idx] >= 0) & (d[bad_idx] >= 0)
    fb = _route_on(net, np.ones(L, bool), s[bad_idx[alive]], d[bad_idx[alive]], split)
    fpb = fb.csr()
    reach, hops, lat = part.reach, part.hops, part.lat
    arcs = sp.csr_matrix((pl.data, pl.indices, pl.indptr[:-1]), shape=(K, L))   # without the placeholder
    if alive.all() and np.all(np.diff(fpb.indptr) == 1):
        # each rerouted pair has one piece (ECMP pair by pair): it takes the pair's placeholder slot
        cols = fpb.indices.astype(np.int64) + K
        idt = fp.indices.dtype if cols.max(initial=0) < np.iinfo(fp.indices.dtype).max else np.int64
        indices = fp.indices.astype(idt, copy=False)
        pos = fp.indptr[bad_idx]
        indices[pos] = cols
        fp.data[pos] = fpb.data
        out = sp.csr_matrix((F, K + fb.K), dtype=float)
        out.data, out.indices, out.indptr = fp.data, indices, fp.indptr.astype(idt, copy=False)
        reach[bad_idx], hops[bad_idx], lat[bad_idx] = fb.reach, fb.hops, fb.lat
        return _Part(out, sp.vstack([arcs, fb.pl], format="csr"), reach, hops, lat)
    good_idx = np.flatnonzero(~bad)
    sub = fp[good_idx]                               # no placeholder among them
    sub = sp.csr_matrix((sub.data, sub.indices, sub.indptr), shape=(len(good_idx), K))
    keep = _Part(sub, arcs, reach[good_idx], hops[good_idx], lat[good_idx])
    return _merge(F, L, [(good_idx, keep), (bad_idx[alive], fb)])


def route_dor(net: _Net, s: np.ndarray, d: np.ndarray, split: str, tiers: str) -> PolicyRoutes:
    """Policy ``dor``: dimension-order routes, ECMP for pairs whose path is broken (``tiers`` does not apply)."""
    return PolicyRoutes(_dor(net, s, d, split))


def loads_dor(req: Request, w: np.ndarray, split: str) -> Loads:
    """Link loads under ``dor`` without the rerouted pairs' pieces (see :func:`~fabricsim.topo.routing.link_loads`)."""
    lt, net, s, d = req.links, req.net, req.src_node, req.dst_node
    F = len(req.src_rank)
    reach = np.zeros(F, bool)
    hops = np.zeros(F, np.int32)
    lat = np.zeros(F)
    alive = np.flatnonzero((s >= 0) & (d >= 0))
    part, bad = _dor_paths(net, s[alive], d[alive], split)
    good, rerouted = alive[~bad], alive[bad]
    lb = np.asarray(part.pl.T @ (part.fp.T @ w[alive]))         # a broken pair's placeholder carries nothing
    reach[good], hops[good], lat[good] = True, part.hops[~bad], part.lat[~bad]
    if len(rerouted):
        more, r_ok, r_hops, r_lat = _ecmp_loads(net, np.ones(len(lt), bool), s[rerouted], d[rerouted],
                                                np.ascontiguousarray(w[rerouted]), split)
        lb = lb + more
        reach[rerouted], hops[rerouted], lat[rerouted] = r_ok, np.where(r_ok, r_hops, 0), np.where(r_ok, r_lat, 0)
    return Loads(lb, reach, hops, lat)


# ---------------------------------------------------------------------------------------
# Symmetry fold: translations
# ---------------------------------------------------------------------------------------
def _dor_dims(G: nx.Graph):
    """(ring lengths, None) of a dimension-order torus, or (None, why it is not one): what every fold checks first."""
    from . import POLICIES
    policy = G.graph.get("routing")
    if not (isinstance(policy, str) and policy in POLICIES and POLICIES[policy].dimension_order):
        return None, f"the routing policy is {policy!r}, not dimension-order ('dor')"
    dims = _graph_dims(G)
    if dims is None:
        return None, f"graph attribute dims={G.graph.get('dims')!r} is not 1 to {len(_AXES)} ring lengths"
    return dims, None


def _graph_dims(G: nx.Graph):
    raw = G.graph.get("dims")
    try:
        dims = tuple(int(p) for p in str(raw).lower().split("x"))
    except ValueError:
        return None
    return dims if 0 < len(dims) <= len(_AXES) and all(k >= 1 for k in dims) else None


def _divisors(k: int) -> list[int]:
    return [t for t in range(1, k + 1) if k % t == 0]


def fold_translations(G: nx.Graph, rows, pairs=None, *, links=None, split: str = "equal", tiers: str = "rule",
                      guard=None) -> Fold:
    """Fold a phase into translation classes on an intact DOR torus, or say why not.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with ``routing == "dor"`` and ``dims`` (other fabrics are refused).
    rows : array_like of int, shape (R, m)
        Chip ranks, one row per set of chips exchanging together; rows must be disjoint.
    pairs : array_like of int, shape (2, p), optional
        In every row, member ``pairs[0, i]`` sends one flow to member ``pairs[1, i]``;
        a translation must then keep the members' order.  ``None`` (default): every
        ordered pair of distinct members (an all-to-all), which a translation may
        permute.
    links : routing.LinkTable, optional
    split : str
        Passed to :func:`routing.route` for the representatives.
    tiers : str
        Unused (``dor`` has no tiers); accepted so every policy's fold takes the same arguments.
    guard : callable, optional
        Called with the number of representative flows before they are routed (the
        caller's memory guard: it raises to refuse).

    Returns
    -------
    Fold
        ``method="translations"``; its ``quotient`` is ``None`` (and ``reason`` says
        why) when the fabric or the phase lacks a translation symmetry, or when the
        only symmetry is the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims="4x4x4")
    >>> q = fold_translations(G, np.arange(64)[None, :]).quotient
    >>> q.n_classes, int(q.multiplicity[0]), q.n_flows == 64 * 63
    (63, 64, True)
    >>> fold_translations(G, [[0, 1], [1, 2]]).reason
    'groups share chips (rows must be disjoint)'
    """
    from . import link_table, route
    M = "translations"

    def no(reason: str) -> Fold:
        return Fold.refuse(M, reason)

    dims, why = _dor_dims(G)
    if dims is None:
        return no(why)
    nd, N = len(dims), int(np.prod(dims))
    rows = np.asarray(rows, dtype=np.int64)
    unordered = pairs is None
    if not unordered:
        pair_a, pair_b = (np.asarray(x, dtype=np.int64) for x in pairs)
    if rows.ndim != 2 or rows.size == 0 or (unordered and rows.shape[1] < 2) or (not unordered and not len(pair_a)):
        return no("the phase has no flows to fold")
    lt = link_table(G) if links is None else links
    # chips: every grid position exactly once, and nothing but chips
    n_nodes = len(lt.nodes)
    if G.number_of_nodes() != N or n_nodes != N:
        return no(f"the graph has {n_nodes:,} forwarding nodes where dims {'x'.join(map(str, dims))} has "
                  f"{N:,} positions (a chip failed, or switches)")
    net = _net(G, lt)                          # node arrays, shared with the routing of the representatives
    if not net.is_chip.all() or any(a not in net.attr for a in _AXES[:nd]):
        return no(f"not every node is a chip with coordinates {', '.join(_AXES[:nd])}")
    coords = np.stack([net.attr[a] for a in _AXES[:nd]], axis=1)
    if (coords < 0).any() or (coords >= np.array(dims)).any():
        return no("a chip's coordinates lie outside dims")
    rank = net.rank
    flat = np.ravel_multi_index(tuple(coords.T), dims)
    if np.bincount(flat, minlength=N).max() != 1 or rank.min() < 0 or rank.max() >= N \
            or np.bincount(rank, minlength=N).max() != 1:
        return no("chip positions or ranks are not each used exactly once")
    pos_of_rank = np.empty(N, np.int64)
    pos_of_rank[rank] = flat
    rank_of_pos = np.empty(N, np.int64)
    rank_of_pos[flat] = rank
    node_of_pos = np.empty(N, np.int64)
    node_of_pos[flat] = np.arange(n_nodes)
    # links: every unit ring step from every position, once
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    disp = (coords[v] - coords[u]) % np.array(dims)
    moved = disp != 0
    if not (moved.sum(axis=1) == 1).all():
        return no("a link joins chips that differ in more than one coordinate (not a torus ring link)")
    axis = np.argmax(moved, axis=1)
    step = disp[np.arange(len(u)), axis]
    k_of = np.array(dims)[axis]
    if not ((step == 1) | (step == k_of - 1)).all():
        return no("a link skips ring positions (not a unit ring step)")
    expected = sum(N * (2 if k > 2 else 1 if k == 2 else 0) for k in dims)
    dcode = axis * 2 + (step != 1)              # direction code: +1 or -1 along an axis (k = 2: +1 only)
    key = flat[u] * (2 * nd) + dcode
    if len(u) != expected or len(np.unique(key)) != expected:
        return no(f"the torus has {len(u):,} directed links where an intact one has {expected:,} "
                  f"(a failed or extra link)")
    # the phase: rows of distinct, present chips
    if rows.min() < 0 or rows.max() >= N:
        return no(f"a group names a rank outside 0..{N - 1}")
    if not unordered and (min(pair_a.min(), pair_b.min()) < 0 or max(pair_a.max(), pair_b.max()) >= rows.shape[1]):
        return no("the phase's pattern names a member outside its groups")
    X = pos_of_rank[rows]                       # (R, m) grid positions
    if np.bincount(X.ravel(), minlength=N).max() > 1:
        return no("groups share chips (rows must be disjoint)")
    R, m = rows.shape
    lab = np.full(N, -1, np.int64)
    lab[X] = np.arange(R)[:, None]
    mem = np.full(N, -1, np.int64)
    mem[X] = np.arange(m)[None, :]
    grid = np.arange(N).reshape(dims)

    def moved_by(a: int, t: int) -> np.ndarray:
        """Flat position of each position after a step of t along axis a."""
        return np.roll(grid, -t, axis=a).ravel()

    def invariant(shift: np.ndarray) -> bool:
        L2 = lab[shift[X]]
        if (L2 < 0).any() or not (L2 == L2[:, :1]).all():
            return False
        return unordered or bool((mem[shift[X]] == np.arange(m)[None, :]).all())

    period, gens = [], []
    for a, k in enumerate(dims):
        for t in _divisors(k):
            if t == k:
                period.append(k)
                break
            shift = moved_by(a, t)
            if invariant(shift):
                period.append(t)
                gens.append(shift)
                break
    mult = int(np.prod([k // t for k, t in zip(dims, period)]))
    if mult == 1:
        return no("no translation maps the groups onto themselves (they do not tile the torus"
                  + ("" if unordered else " in member order") + ")")
    # link orbits: (position in the cell, direction); each holds exactly mult links
    cell_pos = np.ravel_multi_index(tuple((coords % np.array(period)).T), tuple(period))
    okey = cell_pos[u] * (2 * nd) + dcode
    link_orbit = np.unique(okey, return_inverse=True)[1].astype(np.int64)
    O = int(link_orbit.max()) + 1
    if (np.bincount(link_orbit, minlength=O) != mult).any():
        return no("link orbits under the translations are not all of one size")
    differs = _uniform_within(link_orbit, O, lt)
    if differs:
        return no(f"links a translation exchanges differ in {differs}")   # unequal links break the symmetry
    # class representatives: the pairs whose sender sits in the fundamental cell
    in_cell = np.all(coords[node_of_pos] < np.array(period), axis=1)     # by flat position
    cell_x = np.flatnonzero(in_cell & (lab >= 0))
    j = mem[cell_x]                                      # member index of each cell chip
    if unordered:
        # every other member of the row, in member order
        rep_row = np.repeat(lab[cell_x], m - 1)
        others = np.ones((len(cell_x), m), bool)
        others[np.arange(len(cell_x)), j] = False
        rep_src = np.repeat(rows[lab[cell_x], j], m - 1)
        rep_dst = rows[lab[cell_x]][others]
    else:
        by_sender = np.argsort(pair_a, kind="stable")    # pattern pairs grouped by sending member
        first = np.searchsorted(pair_a[by_sender], np.arange(m))
        c = np.bincount(pair_a, minlength=m)[j]
        before = np.cumsum(c) - c
        p = by_sender[np.repeat(first[j] - before, c) + np.arange(int(c.sum()))]
        rep_row = np.repeat(lab[cell_x], c)
        rep_src = rows[rep_row, pair_a[p]]
        rep_dst = rows[rep_row, pair_b[p]]
    if (rep_src == rep_dst).any():
        return no("the pattern sends a flow from a chip to itself")
    if guard is not None:
        guard(len(rep_src))
    routes = route(G, rep_src, rep_dst, split=split, links=lt)
    if not np.all(routes.reachable):
        return no("a representative flow has no route")
    piece_orbit = _fold(routes, link_orbit, O)
    # row orbits: rows joined by a generator step are one orbit
    if gens and R > 1:
        src_rows = np.concatenate([np.arange(R)] * len(gens))
        dst_rows = np.concatenate([lab[g[X[:, 0]]] for g in gens])
        A = sp.csr_matrix((np.ones(len(src_rows)), (src_rows, dst_rows)), shape=(R, R))
        from scipy.sparse import csgraph   # imported on use: it costs ~50 ms at start-up
        row_orbit = csgraph.connected_components(A, directed=False)[1].astype(np.int64)
    else:
        row_orbit = np.arange(R, dtype=np.int64)
    coords_of_rank = np.empty((N, nd), np.int64)
    coords_of_rank[rank] = coords
    frame = {"dims": dims, "coords_of_rank": coords_of_rank, "rank_of_pos": rank_of_pos, "link_coords": coords[u]}
    return Fold(Quotient("translation", tuple(period), np.full(len(rep_src), mult, np.int64), rep_src, rep_dst,
                         rep_row, routes, piece_orbit, link_orbit, np.full(O, mult, np.int64), row_orbit, frame), M)


# Largest generators x flows :func:`fold_stabilizer` follows (one image of every flow per generator).
_STABILIZER_WORK = 50_000_000


def _product_orbits(dims, per_axis):
    """(sender, receiver, orbit size) of :func:`_product_classes` (without the grid)."""
    return _product_classes(dims, per_axis)[:3]


def _product_classes(dims, per_axis):
    """Orbits of the ordered position pairs ``(s, d)``, ``s != d``, under a product of per-axis groups.

    The group acts on each axis alone, so the orbit of a pair is the product of the
    orbits of its per-axis coordinate pairs ``(s_a, d_a)``: each axis's orbits of
    ``k_a**2`` pairs are found by enumeration, and the classes are their product (less
    the pairs equal on every axis), without listing the ``N (N - 1)`` flows.
    Returns (sender flat position, receiver flat position, orbit size) per class, the
    representative being the pair with the least receiver coordinate (then sender) of
    each per-axis orbit, classes in row-major order of their per-axis classes; and the
    classes as a :class:`_Grid` (for :func:`_dor`).
    """
    reps_s, reps_d, sizes, diag = [], [], [], []
    for k, maps in zip(dims, per_axis):
        # receiver-major codes d * k + s: the least member has the least receiver, so the
        # representatives share few receivers (one shortest-path DAG each where a failure reroutes)
        b, a = np.divmod(np.arange(k * k, dtype=np.int64), k)
        canon = np.full(k * k, np.iinfo(np.int64).max, np.int64)
        for sgn, off in maps:
            np.minimum(canon, ((sgn * b + off) % k) * k + (sgn * a + off) % k, out=canon)
        rep, size = np.unique(canon, return_counts=True)
        reps_s.append(rep % k)
        reps_d.append(rep // k)
        sizes.append(size)
        diag.append(rep // k == rep % k)
    # the product by broadcasting: axis a's per-axis classes along dimension a
    nd = len(dims)
    strides = np.cumprod((1,) + tuple(dims[:0:-1]))[::-1]        # flat position = sum of coordinate x stride

    def outer(parts, combine):
        out = None
        for a, v in enumerate(parts):
            v = v.reshape((1,) * a + (-1,) + (1,) * (nd - a - 1))
            out = v if out is None else combine(out, v)
        return out.ravel()

    src = outer([rs * st for rs, st in zip(reps_s, strides)], np.add)
    dst = outer([rd * st for rd, st in zip(reps_d, strides)], np.add)
    mult = outer(sizes, np.multiply)
    keep = ~outer(diag, np.logical_and)
    grid = _Grid(tuple(reps_s), tuple(reps_d), keep.reshape(tuple(len(r) for r in reps_s)))
    return (src[keep].astype(np.int64, copy=False), dst[keep].astype(np.int64, copy=False),
            mult[keep].astype(np.int64, copy=False), grid)


def fold_stabilizer(G: nx.Graph, rows, *, links=None, split: str = "equal", guard=None) -> Fold:
    """Fold an all-to-all on a DOR torus with failed links by the symmetries that fix the failures.

    The candidate symmetries act on each axis alone: a reflection ``x -> c - x (mod k)``
    and translations ``x -> x + t``.  Those that map the torus's links onto links of the
    same capacity, latency and hop count (so the failed or degraded ones onto each
    other) and the groups onto groups generate the stabilizer; every flow stands for its
    orbit under it.  Dimension-order routes commute with these maps (a reflection turns
    the shorter arc into the shorter arc and splits a half-ring tie the same way), and
    pairs whose route a failure breaks take ECMP over the surviving graph, which its
    automorphisms preserve, so the quotient is exact.  One failed link leaves the
    ``2**dims`` reflections through it: about one eighth of the flows on a 3-D torus.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with ``routing == "dor"``, ``dims``, every chip present (a failed chip
        is refused), links a subset of the torus's unit ring steps.
    rows : array_like of int, shape (R, m)
        Chip ranks; each row sends an all-to-all among its members.  Rows must be disjoint.
    links : routing.LinkTable, optional
    split : str
        Passed to :func:`routing.route` for the representatives.
    guard : callable, optional
        Called with the number of representative flows before they are routed.

    Returns
    -------
    Fold
        ``method="stabilizer"``; its ``quotient`` (symmetry ``"stabilizer"``) holds one
        representative per flow orbit with the orbit's size as multiplicity, and link
        orbits of varying size; ``None`` with the reason when no symmetry but the
        identity fixes the failures and the groups.

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.topo.failures import apply_failures
    >>> H = apply_failures(build("torus", dims="4x4x4"), ["link:c00.00.00--c01.00.00"])[0]
    >>> q = fold_stabilizer(H, np.arange(64)[None, :]).quotient
    >>> q.n_flows, q.n_classes, int(q.multiplicity.max())
    (4032, 782, 8)
    """
    from . import _request, _routes, link_table, route
    M = "stabilizer"

    def no(reason: str) -> Fold:
        return Fold.refuse(M, reason)

    dims, why = _dor_dims(G)
    if dims is None:
        return no(why)
    nd, N = len(dims), int(np.prod(dims))
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] < 2 or rows.size == 0:
        return no("the phase has no flows to fold")
    lt = link_table(G) if links is None else links
    n_nodes = len(lt.nodes)
    if G.number_of_nodes() != N or n_nodes != N:
        return no(f"the graph has {n_nodes:,} forwarding nodes where dims {'x'.join(map(str, dims))} has "
                  f"{N:,} positions (a chip failed, or switches)")
    net = _net(G, lt)
    if not net.is_chip.all() or any(a not in net.attr for a in _AXES[:nd]):
        return no(f"not every node is a chip with coordinates {', '.join(_AXES[:nd])}")
    coords = np.stack([net.attr[a] for a in _AXES[:nd]], axis=1).astype(np.int64)
    kk = np.array(dims, dtype=np.int64)
    if (coords < 0).any() or (coords >= kk).any():
        return no("a chip's coordinates lie outside dims")
    rank = net.rank
    flat = np.ravel_multi_index(tuple(coords.T), dims)
    if np.bincount(flat, minlength=N).max() != 1 or rank.min() < 0 or rank.max() >= N \
            or np.bincount(rank, minlength=N).max() != 1:
        return no("chip positions or ranks are not each used exactly once")
    pos_of_rank = np.empty(N, np.int64)
    pos_of_rank[rank] = flat
    rank_of_pos = np.empty(N, np.int64)
    rank_of_pos[flat] = rank
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    disp = (coords[v] - coords[u]) % kk
    moved = disp != 0
    if not (moved.sum(axis=1) == 1).all():
        return no("a link joins chips that differ in more than one coordinate (not a torus ring link)")
    axis = np.argmax(moved, axis=1)
    step = disp[np.arange(len(u)), axis]
    if not ((step == 1) | (step == kk[axis] - 1)).all():
        return no("a link skips ring positions (not a unit ring step)")
    code = flat[u] * N + flat[v]
    order = np.argsort(code)
    code_sorted = code[order]
    if len(code_sorted) and (code_sorted[1:] == code_sorted[:-1]).any():
        return no("two links join the same chips in the same direction")
    if rows.min() < 0 or rows.max() >= N:
        return no(f"a group names a rank outside 0..{N - 1}")
    X = pos_of_rank[rows]
    if np.bincount(X.ravel(), minlength=N).max() > 1:
        return no("groups share chips (rows must be disjoint)")
    R, m = rows.shape
    lab = np.full(N, -1, np.int64)
    lab[X] = np.arange(R)[:, None]
    # what a symmetry must keep: each link's capacity, latency and hop count
    props = np.stack([np.asarray(lt.capacity_gbps, np.float64), np.asarray(lt.latency_ns, np.float64),
                      np.asarray(lt.hops, np.float64)], axis=1)

    def apply(maps) -> np.ndarray:
        """Flat position of each position under per-axis maps (sign, offset)."""
        c = coords.copy()
        for a, (sgn, off) in enumerate(maps):
            c[:, a] = (sgn * c[:, a] + off) % kk[a]
        out = np.empty(N, np.int64)
        out[flat] = np.ravel_multi_index(tuple(c.T), dims)
        return out

    def link_image(perm: np.ndarray):
        """Each link's image under a position permutation, or None when one is not a link alike."""
        img = perm[flat[u]] * N + perm[flat[v]]
        at = np.searchsorted(code_sorted, img)
        at = np.minimum(at, len(code_sorted) - 1)
        if not (code_sorted[at] == img).all():
            return None
        lid = order[at]
        return lid if np.array_equal(props[lid], props) else None

    def keeps_groups(perm: np.ndarray) -> bool:
        L2 = lab[perm[X]]
        return not (L2 < 0).any() and bool((L2 == L2[:, :1]).all())

    ident = [(1, 0)] * nd
    flat_ident = apply(ident)
    per_axis = []            # per axis: the maps (sign, offset) of its subgroup
    for a, k in enumerate(dims):
        def one(sgn, off, a=a):
            maps = list(ident)
            maps[a] = (sgn, off)
            perm = apply(maps)
            return link_image(perm) is not None and keeps_groups(perm)
        t = next((t for t in _divisors(k) if t == k or one(1, t)), k)
        c = next((c for c in range(k) if one(-1, c)), None) if k > 2 or (k == 2 and t == k) else None
        maps = [(1, j * t) for j in range(k // t)]
        if c is not None:
            maps += [(-1, (c + j * t) % k) for j in range(k // t)]
        per_axis.append(maps)
    n_flows = R * m * (m - 1)
    whole = R == 1 and m == N       # one all-to-all over every chip: orbits are products of per-axis ones
    # generators of the group: per axis its translation step and its reflection (the
    # per-axis maps are their products); elements acting as the identity dropped (on a
    # ring of 2 a reflection is a translation or the identity)
    gens = []
    for a, mp in enumerate(per_axis):
        for g in ([mp[1]] if len(mp) > 1 and mp[1][0] == 1 else []) + [m for m in mp if m[0] == -1][:1]:
            maps = list(ident)
            maps[a] = g
            perm = apply(maps)
            if not np.array_equal(perm, flat_ident):
                gens.append(perm)
    if not gens:
        return no("no reflection or translation maps the failed links and the groups onto themselves")
    if not whole and len(gens) * n_flows > _STABILIZER_WORK:
        return no(f"the stabilizer has {len(gens)} generators: following the images of {n_flows:,} flows "
                  f"is too much (the translation fold serves intact tori)")
    from scipy.sparse import csgraph

    def components(n: int, images) -> np.ndarray:
        """Components of i -> image(i) over the generators' images (arrays of length n)."""
        A = sp.csr_matrix((np.ones(n * len(images)), (np.tile(np.arange(n), len(images)), np.concatenate(images))),
                          shape=(n, n))
        return csgraph.connected_components(A, directed=True, connection="weak")[1]

    grid = None
    if whole:
        rep_pos_s, rep_pos_d, mult, grid = _product_classes(dims, per_axis)
    else:
        # flow orbits: the flows (every sender, receiver position pair of every row) a generator
        # word joins, each represented by its least code sender * N + receiver (the least image
        # under every element of the group, as enumerating the elements gives)
        i, j = np.nonzero(~np.eye(m, dtype=bool))
        sp_, dp_ = X[:, i].ravel(), X[:, j].ravel()
        code = sp_ * N + dp_
        at = np.argsort(code)
        code_sorted_f = code[at]
        images = []
        for perm in gens:
            img = perm[sp_] * N + perm[dp_]
            k = np.minimum(np.searchsorted(code_sorted_f, img), len(code) - 1)
            if not (code_sorted_f[k] == img).all():  # pragma: no cover - keeps_groups checked every generator
                return no("a symmetry does not map the groups' flows onto flows")
            images.append(at[k])
        del sp_, dp_, at, code_sorted_f
        comp = components(len(code), images)
        del images
        cmin = np.full(int(comp.max()) + 1, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(cmin, comp, code)
        reps, mult = np.unique(cmin[comp], return_counts=True)
        del comp, code, cmin
        rep_pos_s, rep_pos_d = np.divmod(reps, N)
        del reps
    rep_src, rep_dst = rank_of_pos[rep_pos_s], rank_of_pos[rep_pos_d]
    rep_row = lab[rep_pos_s]
    del rep_pos_s, rep_pos_d
    # link orbits: the links a generator word joins (components of link -> image over the
    # generators), numbered by their least link id (as the least image over every element)
    L = len(u)
    ld = []
    for perm in gens:
        lid = link_image(perm)
        if lid is None:  # pragma: no cover - generators were checked
            return no("a symmetry does not map links onto links")
        ld.append(lid)
    comp = components(L, ld)
    lmin = np.full(int(comp.max()) + 1, L, np.int64)
    np.minimum.at(lmin, comp, np.arange(L))
    link_orbit = np.unique(lmin[comp], return_inverse=True)[1].astype(np.int64)
    O = int(link_orbit.max()) + 1
    differs = _uniform_within(link_orbit, O, lt)
    if differs:  # pragma: no cover - link_image compares these
        return no(f"links the stabilizer exchanges differ in {differs}")
    if guard is not None:
        guard(len(rep_src))
    if grid is None:
        routes = route(G, rep_src, rep_dst, split=split, links=lt)
    else:
        # route() of the representatives, their arcs found per axis of the grid
        routes = _routes(_request(G, rep_src, rep_dst, split, "rule", lt), split, "rule",
                         lambda net, s, d, split, tiers: PolicyRoutes(_dor(net, s, d, split, grid)))
    if not np.all(routes.reachable):
        return no("a representative flow has no route")
    piece_orbit = _fold(routes, link_orbit, O)
    if R > 1:
        row_orbit = components(R, [lab[p[X[:, 0]]] for p in gens]).astype(np.int64)
    else:
        row_orbit = np.zeros(1, np.int64)
    period = tuple(int(k // sum(1 for sg, _ in mp if sg == 1)) for k, mp in zip(dims, per_axis))
    return Fold(Quotient("stabilizer", period, mult.astype(np.int64, copy=False), rep_src, rep_dst, rep_row, routes,
                         piece_orbit, link_orbit, np.bincount(link_orbit, minlength=O), row_orbit), M)


def flows_through(q: Quotient, links: np.ndarray):
    """The flows of a translation quotient whose routes use any of ``links``.

    A failure that removes links from a symmetric torus changes the routes of exactly
    these flows (dimension-order routes elsewhere stay as they were), so a link-load
    bound of the degraded fabric is the symmetric one less their old routes plus their
    new ones.  Found from the classes' routes: a class's representative crossing link
    ``l`` puts the translate by ``position(f) - position(l)`` on every link ``f`` of
    ``l``'s orbit; no flow list is built.

    Parameters
    ----------
    q : Quotient
        From :func:`fold_translations` (``symmetry.translation_quotient``).
    links : array_like of int
        Link indices of ``q``'s link table.

    Returns
    -------
    (src, dst, cls) : numpy.ndarray of int64
        Chip ranks of each such flow (each once) and its class.
    """
    if q.symmetry != "translation":
        raise ValueError("flows_through needs a translation quotient")
    links = np.unique(np.asarray(links, dtype=np.int64))
    empty = np.zeros(0, np.int64)
    if not len(links):
        return empty, empty, empty
    fr = q.frame
    dims = np.array(fr["dims"])
    A = (q.routes.flow_piece @ q.routes.piece_link).tocoo()
    c, l = A.row.astype(np.int64), A.col.astype(np.int64)
    f_orbit = q.link_orbit[links]
    order = np.argsort(f_orbit, kind="stable")
    f_sorted, f_links = f_orbit[order], links[order]
    lo = np.searchsorted(f_sorted, q.link_orbit[l], "left")
    cnt = np.searchsorted(f_sorted, q.link_orbit[l], "right") - lo
    c, l, lo, cnt = c[cnt > 0], l[cnt > 0], lo[cnt > 0], cnt[cnt > 0]
    total = int(cnt.sum())
    if not total:
        return empty, empty, empty
    ends = np.cumsum(cnt)
    f = f_links[np.repeat(lo - (ends - cnt), cnt) + np.arange(total)]
    c, l = np.repeat(c, cnt), np.repeat(l, cnt)
    tau = (fr["link_coords"][f] - fr["link_coords"][l]) % dims
    key = np.unique(c * int(np.prod(dims)) + np.ravel_multi_index(tuple(tau.T), tuple(dims)))
    c = key // int(np.prod(dims))
    tau = np.stack(np.unravel_index(key % int(np.prod(dims)), tuple(dims)), axis=1)
    cr = fr["coords_of_rank"]

    def moved(ranks):
        return fr["rank_of_pos"][np.ravel_multi_index(tuple(((cr[ranks] + tau) % dims).T), tuple(dims))]
    return moved(q.rep_src[c]), moved(q.rep_dst[c]), c
